package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// twoStores imports the fixture into a SQLite file and opens it twice, as serve and a command
// beside it do; it returns both stores and the file's URL.
func twoStores(t *testing.T) (served, other *store.Store, url string) {
	t.Helper()
	ctx := context.Background()
	url = testdb.URL(t, "sqlite")
	open := func() *store.Store {
		st, err := store.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		st.SetChainSigner(testdb.Ring(t))
		return st
	}
	served, other = open(), open()
	if err := served.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := dataset.Import(ctx, served, fixture(), testdb.Ring(t)); err != nil {
		t.Fatal(err)
	}
	return served, other, url
}

func staffCredential(t *testing.T, st *store.Store) domain.Credential {
	t.Helper()
	c, err := st.Credential(context.Background(), domain.CredentialAPIKey, secrets.HashCredential(domain.CredentialAPIKey, staffKey))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A read the store may answer from its cache sees every commit made before it, by whichever
// connection: another store on the file (another process), the served store's own pool, plain
// SQL from outside the store (the sqlite3 shell).
func TestCacheSeesEveryCommit(t *testing.T) {
	ctx := context.Background()
	staff := domain.Scope{}

	t.Run("revocation through another store", func(t *testing.T) {
		served, other, _ := twoStores(t)
		if c := staffCredential(t, served); c.RevokedAt != nil {
			t.Fatal("revoked before the test")
		}
		staffCredential(t, served) // now answered from the cache
		if err := other.RevokeAPIKey(ctx, id(111), fixtureNow, event("api_key.revoke", id(111))); err != nil {
			t.Fatal(err)
		}
		if c := staffCredential(t, served); c.RevokedAt == nil {
			t.Error("a key revoked through another store still reads as not revoked")
		}
	})

	t.Run("revocation through the same store", func(t *testing.T) {
		served, _, _ := twoStores(t)
		staffCredential(t, served)
		staffCredential(t, served)
		if err := served.RevokeAPIKey(ctx, id(111), fixtureNow, event("api_key.revoke", id(111))); err != nil {
			t.Fatal(err)
		}
		if c := staffCredential(t, served); c.RevokedAt == nil {
			t.Error("a key revoked through the store's own pool still reads as not revoked")
		}
	})

	t.Run("import through another store", func(t *testing.T) {
		served, other, _ := twoStores(t)
		_, before, err := store.ListSAMActionLogs(ctx, served, leadA, 1, 20)
		if err != nil {
			t.Fatal(err)
		}
		ds := &dataset.Dataset{SAMActionLogs: []domain.SAMActionLog{samLog(9000, leadA, fixtureNow.Add(time.Hour))}}
		if _, err := dataset.Import(ctx, other, ds, nil); err != nil {
			t.Fatal(err)
		}
		logs, after, err := store.ListSAMActionLogs(ctx, served, leadA, 1, 20)
		if err != nil || after != before+1 || logs[0].ID != id(9000) {
			t.Errorf("after an import elsewhere: total %d (was %d), first %v, %v; want the new log first", after, before, logs[0].ID, err)
		}
	})

	t.Run("rewrap through another store", func(t *testing.T) {
		served, other, _ := twoStores(t)
		if s, err := served.PrincipalSSN(ctx, staff, leadA, principalA); err != nil || s.KeyID != testdb.DefaultKeyID {
			t.Fatalf("before: %+v, %v", s, err)
		}
		if _, err := other.RewrapSSNs(ctx, testdb.Ring(t, "new", testdb.DefaultKeyID), "", 100); err != nil {
			t.Fatal(err)
		}
		if s, err := served.PrincipalSSN(ctx, staff, leadA, principalA); err != nil || s.KeyID != "new" {
			t.Errorf("after a rewrap elsewhere: key %q, %v; want new", s.KeyID, err)
		}
	})

	t.Run("plain SQL from outside the store", func(t *testing.T) {
		served, _, url := twoStores(t)
		if sa, err := served.ServiceAcceptance(ctx, staff, leadA); err != nil || *sa.AmexProgram != "opt_blue" {
			t.Fatalf("before: %+v, %v", sa, err)
		}
		// With a busy timeout, as any second writer needs: the store's background WAL purge (after
		// the fixture's import) takes the write lock for a moment, and without one the UPDATE
		// would fail at once with SQLITE_BUSY (a flake seen once in 40 runs).
		db, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(url, "sqlite:")+"?_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, `UPDATE leads SET sa_amex_program = 'retail' WHERE id = ?`, string(leadA)); err != nil {
			t.Fatal(err)
		}
		if sa, err := served.ServiceAcceptance(ctx, staff, leadA); err != nil || *sa.AmexProgram != "retail" {
			t.Errorf("after an UPDATE from outside: %v, %v; want retail", sa.AmexProgram, err)
		}
	})

	t.Run("document delete through another store keeps the cache", func(t *testing.T) {
		served, other, _ := twoStores(t)
		staffCredential(t, served)
		if _, err := served.ServiceAcceptance(ctx, staff, leadA); err != nil {
			t.Fatal(err)
		}
		if n := store.CachedReads(served); n != 2 {
			t.Fatalf("the cache holds %d reads, want 2", n)
		}
		if err := other.DeleteMerchantDocument(ctx, staff, merchantA, docA1, event("merchant_document.delete", docA1)); err != nil {
			t.Fatal(err)
		}
		staffCredential(t, served)
		if n := store.CachedReads(served); n != 2 {
			t.Errorf("after a delete elsewhere of what no cached read reads, the cache holds %d reads; want both kept", n)
		}
	})
}

// An answer cached for one scope is never given to another: visibility is checked on each call
// (acceptance, SSN) or is part of the cached read's key (SAM log pages).
func TestCacheKeepsScopesApart(t *testing.T) {
	ctx := context.Background()
	served, _, _ := twoStores(t)
	staff, scopeA := domain.Scope{}, domain.Scope{PartnerID: partnerA}
	for range 2 { // the second time from the cache
		if _, err := served.ServiceAcceptance(ctx, staff, leadB); err != nil {
			t.Fatal(err)
		}
		if _, err := served.PrincipalSSN(ctx, staff, leadB, principalB); err != nil {
			t.Fatal(err)
		}
		if _, _, visible, err := served.ListVisibleSAMActionLogs(ctx, staff, equipmentLoose, 1, 20); err != nil || !visible {
			t.Fatalf("staff: visible %v, %v", visible, err)
		}
		if _, err := served.ServiceAcceptance(ctx, scopeA, leadB); err != domain.ErrNotFound {
			t.Errorf("partner A reads lead B's acceptance: %v, want not found", err)
		}
		if _, err := served.PrincipalSSN(ctx, scopeA, leadB, principalB); err != domain.ErrNotFound {
			t.Errorf("partner A reads lead B's SSN: %v, want not found", err)
		}
		if logs, _, visible, err := served.ListVisibleSAMActionLogs(ctx, scopeA, equipmentLoose, 1, 20); err != nil || visible || len(logs) != 0 {
			t.Errorf("partner A reads loose equipment's logs: %d logs, visible %v, %v", len(logs), visible, err)
		}
	}
}

// What a caller gets is its own: changing it changes no later answer.
func TestCacheHandsOutCopies(t *testing.T) {
	ctx := context.Background()
	served, _, _ := twoStores(t)
	sa, err := served.ServiceAcceptance(ctx, domain.Scope{}, leadA)
	if err != nil {
		t.Fatal(err)
	}
	sa.CardPlans[0].Code = "changed"
	logs, _, err := store.ListSAMActionLogs(ctx, served, leadA, 1, 20)
	if err != nil {
		t.Fatal(err)
	}
	logs[0].Action = "changed"
	c := staffCredential(t, served)
	c.Actor.Permissions[0] = "changed"
	if again, _ := served.ServiceAcceptance(ctx, domain.Scope{}, leadA); again.CardPlans[0].Code == "changed" {
		t.Error("a caller's change to an acceptance reached the cache")
	}
	if again, _, _ := store.ListSAMActionLogs(ctx, served, leadA, 1, 20); again[0].Action == "changed" {
		t.Error("a caller's change to a page reached the cache")
	}
	if again := staffCredential(t, served); again.Actor.Permissions[0] == "changed" {
		t.Error("a caller's change to a credential reached the cache")
	}
}

// A request sees its own write: its read after the write checks the database again.
func TestRequestSeesItsOwnWrite(t *testing.T) {
	served, _, _ := twoStores(t)
	req := context.Background()
	c := staffCredential(t, served)
	if got, err := served.Credential(req, domain.CredentialAPIKey, c.Hash); err != nil || got.RevokedAt != nil {
		t.Fatalf("before the revocation: %+v, %v", got, err)
	}
	if err := served.RevokeAPIKey(req, c.ID, fixtureNow, event("api_key.revoke", c.ID)); err != nil {
		t.Fatal(err)
	}
	got, err := served.Credential(req, domain.CredentialAPIKey, c.Hash)
	if err != nil || got.RevokedAt == nil {
		t.Errorf("the request's read after its own revocation: %+v, %v; want it revoked", got, err)
	}
}

// A database file replaced or removed under the served store: every connection still reads the
// orphan, which nobody writes any more, so its cached answers would never be dropped. Reads are
// refused as unavailable instead (a key revoked in the new file is not accepted from the old), and
// answered again once the file that was opened is back at its path.
func TestCacheRefusesAReplacedFile(t *testing.T) {
	ctx := context.Background()
	served, other, url := twoStores(t)
	path := strings.TrimPrefix(url, "sqlite:")
	key := staffCredential(t, served) // read, and cached
	// The file as opened stays reachable under a second name, to be put back.
	if err := os.Link(path, path+".orig"); err != nil {
		t.Fatal(err)
	}
	replacement := path + ".new"
	if _, err := store.DB(other).ExecContext(ctx, "VACUUM INTO ?", replacement); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", replacement)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE api_keys SET revoked_at = 1 WHERE id = ?`, key.ID); err != nil {
		t.Fatal(err)
	}
	db.Close()

	if err := os.Rename(replacement, path); err != nil {
		t.Fatal(err)
	}
	if c, err := served.Credential(ctx, domain.CredentialAPIKey, key.Hash); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("credential after the file was replaced: revoked %v, %v; want ErrUnavailable", c.RevokedAt, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := served.Credential(ctx, domain.CredentialAPIKey, key.Hash); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("credential after the file was removed: %v; want ErrUnavailable", err)
	}
	if err := os.Rename(path+".orig", path); err != nil {
		t.Fatal(err)
	}
	if c, err := served.Credential(ctx, domain.CredentialAPIKey, key.Hash); err != nil || c.RevokedAt != nil {
		t.Errorf("credential once the opened file is back: revoked %v, %v", c.RevokedAt, err)
	}
}

// engineStores runs fn per engine (SQLite always, PostgreSQL when configured) with a fresh store
// holding the fixture and a plain connection of its own to the same database, as the sqlite3
// shell or psql would have.
func engineStores(t *testing.T, fn func(t *testing.T, st *store.Store, plain *sql.DB)) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			st, plain := engineStore(t, engine)
			fn(t, st, plain)
		})
	}
}

// engineStore is a fresh store of the engine holding the fixture, and a plain connection of its
// own to the same database.
func engineStore(t *testing.T, engine string) (*store.Store, *sql.DB) {
	t.Helper()
	url := testdb.URL(t, engine)
	st := testdb.OpenURL(t, url)
	testdb.Import(t, st, fixture())
	driver, dsn := "pgx", url
	if engine == "sqlite" {
		// A busy timeout, as any second writer needs (the store's WAL purge after the
		// import takes the write lock for a moment).
		driver, dsn = "sqlite", "file:"+strings.TrimPrefix(url, "sqlite:")+"?_pragma=busy_timeout(5000)"
	}
	plain, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Close() })
	return st, plain
}

// Plain SQL on any table a cached read reads, through a connection of its own (the sqlite3 shell,
// psql, another replica), is seen by the next read: the table's triggers move the cache
// generation in the same transaction. One change per table and per kind of cached read; the
// changes are ordered so that each leaves the next one's rows as the fixture had them.
func TestCacheSeesPlainSQLOnEachCachedTable(t *testing.T) {
	engineStores(t, func(t *testing.T, st *store.Store, plain *sql.DB) {
		ctx := context.Background()
		for _, c := range plainChanges(st) {
			before, err := c.read(ctx)
			if err != nil {
				t.Fatalf("%s: %v", c.table, err)
			}
			if again, err := c.read(ctx); err != nil || again != before { // from the cache
				t.Fatalf("%s: read again: %q, %v; want %q", c.table, again, err, before)
			}
			if _, err := plain.ExecContext(ctx, c.change); err != nil {
				t.Fatalf("%s: %v", c.table, err)
			}
			if after, err := c.read(ctx); err != nil || after == before {
				t.Errorf("%s: after %q the read still answers %q (%v): served stale from the cache", c.table, c.change, after, err)
			}
		}
	})
}

// The setting an import runs under (backoffice.import) is one any session can set, and under it
// the triggers still move the generation, as the transaction commits (PostgreSQL's migration
// 0022): plain SQL that sets it is seen by the next read all the same, on every cached table.
func TestCacheSeesPlainSQLUnderTheImportSetting(t *testing.T) {
	st, plain := engineStore(t, "postgres")
	ctx := context.Background()
	for _, c := range plainChanges(st) {
		before, err := c.read(ctx)
		if err != nil {
			t.Fatalf("%s: %v", c.table, err)
		}
		if err := underImportSetting(ctx, plain, c.change); err != nil {
			t.Fatalf("%s: %v", c.table, err)
		}
		if after, err := c.read(ctx); err != nil || after == before {
			t.Errorf("%s: after %q under the import setting the read still answers %q (%v): served stale from the cache", c.table, c.change, after, err)
		}
	}
}

// underImportSetting runs statements in one transaction of plain's that sets backoffice.import
// on, as an import's does, and commits it.
func underImportSetting(ctx context.Context, plain *sql.DB, statements ...string) error {
	tx, err := plain.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, s := range append([]string{`SELECT set_config('backoffice.import', 'on', true)`}, statements...) {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return tx.Commit()
}

const noSuchUser = "no such user"

// plainChange is a change made with plain SQL to a table a cached read reads, and that read, as
// a string to compare.
type plainChange struct {
	table, change string
	read          func(ctx context.Context) (string, error)
}

// plainChanges are one change per table and per kind of cached read, ordered so that each leaves
// the next one's rows as the fixture had them.
func plainChanges(st *store.Store) []plainChange {
	staff, scopeA := domain.Scope{}, domain.Scope{PartnerID: partnerA}
	credential := func(kind, secret string) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			c, err := st.Credential(ctx, kind, secrets.HashCredential(kind, secret))
			return fmt.Sprint(c.RevokedAt != nil, c.Actor.Permissions, c.UserDisabled), err
		}
	}
	account := func(ref domain.UserRef) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			a, err := st.Account(ctx, ref)
			if errors.Is(err, domain.ErrNotFound) {
				return noSuchUser, nil
			}
			return fmt.Sprint(a.Actor.UserID, a.Disabled), err
		}
	}
	acceptance := func(ctx context.Context) (string, error) {
		sa, err := st.ServiceAcceptance(ctx, staff, leadA)
		return fmt.Sprint(*sa.AmexProgram, sa.CardPlans), err
	}
	ssn := func(ctx context.Context) (string, error) {
		s, err := st.PrincipalSSN(ctx, staff, leadA, principalA)
		return s.KeyID, err
	}
	page := func(scope domain.Scope, entity domain.ID) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			logs, total, visible, err := st.ListVisibleSAMActionLogs(ctx, scope, entity, 1, 20)
			first := ""
			if len(logs) > 0 {
				first = logs[0].Action
			}
			return fmt.Sprint(total, visible, first), err
		}
	}
	return []plainChange{
		{"api_keys", "UPDATE api_keys SET revoked_at = 1 WHERE id = '" + string(id(111)) + "'", credential(domain.CredentialAPIKey, staffKey)},
		{"users", "UPDATE users SET permissions = '' WHERE id = '" + string(userA) + "'", credential(domain.CredentialAPIKey, partnerKey)},
		{"users", "UPDATE users SET disabled = true WHERE id = '" + string(userA) + "'", credential(domain.CredentialAPIKey, partnerKey)},
		{"users", "UPDATE users SET disabled = false WHERE id = '" + string(userA) + "'", account(domain.UserRef{Key: domain.UserKeyID, Value: string(userA)})},
		{"users", "UPDATE users SET external_id = 'idp-7' WHERE id = '" + string(userA) + "'", account(domain.UserRef{Key: domain.UserKeyExternalID, Value: "idp-7"})},
		{"users", "UPDATE users SET external_id = 'idp-8' WHERE id = '" + string(userA) + "'", account(domain.UserRef{Key: domain.UserKeyExternalID, Value: "idp-7"})},
		{"sessions", "UPDATE sessions SET revoked_at = 1 WHERE id = '" + string(id(121)) + "'", credential(domain.CredentialSession, staffSession)},
		{"leads", "UPDATE leads SET sa_amex_program = 'retail' WHERE id = '" + string(leadA) + "'", acceptance},
		{"card_plans", "UPDATE card_plans SET display_name = 'Visa Classic' WHERE id = '" + string(planVisa) + "'", acceptance},
		{"lead_card_plans", "DELETE FROM lead_card_plans WHERE lead_id = '" + string(leadA) + "'", acceptance},
		{"principals", "UPDATE principals SET ssn_key_id = 'other' WHERE id = '" + string(principalA) + "'", ssn},
		{"sam_action_logs", "UPDATE sam_action_logs SET action = 'changed'", page(staff, leadA)},
		{"sam_log_buckets", "UPDATE sam_log_buckets SET n = n + 1", page(staff, leadA)},
		{"line_items", "UPDATE line_items SET equipment_id = '" + string(equipmentLoose) + "' WHERE id = '" + string(itemA) + "'", page(scopeA, equipmentLoose)},
		{"equipment", "DELETE FROM equipment WHERE id = '" + string(equipmentA) + "'", page(staff, equipmentA)},
		{"deployment_orders", "UPDATE deployment_orders SET merchant_id = '" + string(merchantB) + "' WHERE id = '" + string(orderA) + "'", page(scopeA, orderA)},
		{"merchants", "UPDATE merchants SET partner_id = '" + string(partnerB) + "' WHERE id = '" + string(merchantA) + "'", page(scopeA, merchantA)},
	}
}

// A database restored from a copy taken earlier, then changed along another history, never shows
// the generation the cache filed its answers under: the triggers set a new random number rather
// than count up, which would reach the cached number again after as many changes.
func TestCacheSeesARestoredCopyChangedAgain(t *testing.T) {
	engineStores(t, func(t *testing.T, st *store.Store, plain *sql.DB) {
		ctx := context.Background()
		program := func() string {
			t.Helper()
			sa, err := st.ServiceAcceptance(ctx, domain.Scope{}, leadA)
			if err != nil {
				t.Fatal(err)
			}
			return *sa.AmexProgram
		}
		exec := func(q string) {
			t.Helper()
			if _, err := plain.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		var copied int64 // the copy's generation, as a backup taken now would hold it
		if err := plain.QueryRowContext(ctx, "SELECT n FROM cache_generation").Scan(&copied); err != nil {
			t.Fatal(err)
		}
		original := program()
		exec("UPDATE leads SET sa_amex_program = 'one' WHERE id = '" + string(leadA) + "'")
		if got := program(); got != "one" { // filed under the generation after one change
			t.Fatalf("after the change the program is %q, want one", got)
		}
		// The copy comes back with no request in between (its data, then its generation), and the
		// restored database makes one change of its own.
		exec("UPDATE leads SET sa_amex_program = '" + original + "' WHERE id = '" + string(leadA) + "'")
		exec(fmt.Sprintf("UPDATE cache_generation SET n = %d", copied))
		exec("UPDATE leads SET sa_amex_program = 'two' WHERE id = '" + string(leadA) + "'")
		if got := program(); got != "two" {
			t.Errorf("the restored database's program is two; the cache answered %q", got)
		}
	})
}

// The audit trail, a key's last use and the other tables no cached read reads move no cache
// generation: many audit commits (decrypts under load), a stamp and a document deletion leave
// the cache as it was.
func TestCacheOutlivesWritesItDoesNotRead(t *testing.T) {
	engineStores(t, func(t *testing.T, st *store.Store, plain *sql.DB) {
		ctx := context.Background()
		fill := func() {
			t.Helper()
			staffCredential(t, st)
			if _, err := st.ServiceAcceptance(ctx, domain.Scope{}, leadA); err != nil {
				t.Fatal(err)
			}
			if _, err := st.PrincipalSSN(ctx, domain.Scope{}, leadA, principalA); err != nil {
				t.Fatal(err)
			}
		}
		kept := func(what string) {
			t.Helper()
			staffCredential(t, st) // a new check: it would empty a cache whose generation moved
			if n := store.CachedReads(st); n != 3 {
				t.Errorf("after %s the cache holds %d reads; want the 3 it held", what, n)
			}
		}
		fill()
		var wg sync.WaitGroup
		for i := range 64 {
			wg.Go(func() {
				if err := st.RecordAudit(ctx, event("principal.decrypt", id(i))); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		kept("64 audit commits")

		key := staffCredential(t, st)
		st.NoteAPIKeyUse(key.ID, fixtureNow.Add(time.Hour), time.Minute)
		store.WaitBackground(st)
		if c := staffCredential(t, st); c.LastUsedAt != nil {
			t.Errorf("the cached credential's last use moved to %v; it should be the one read", c.LastUsedAt)
		}
		var stamped sql.NullInt64
		if err := plain.QueryRowContext(ctx, "SELECT last_used_at FROM api_keys WHERE id = '"+string(key.ID)+"'").Scan(&stamped); err != nil || !stamped.Valid {
			t.Fatalf("the key's last use was not stamped: %v, %v", stamped, err)
		}
		kept("a last-use stamp")

		if err := st.DeleteMerchantDocument(ctx, domain.Scope{}, merchantA, docA1, event("merchant_document.delete", docA1)); err != nil {
			t.Fatal(err)
		}
		kept("a document deletion")
	})
}

// A cached credential keeps the last use it was read with, so the caller asks for a stamp on
// every request once that is older than the interval: the store writes one per key per interval
// all the same, from its own memory of what it stamped.
func TestLastUseIsStampedOncePerInterval(t *testing.T) {
	engineStores(t, func(t *testing.T, st *store.Store, plain *sql.DB) {
		ctx := context.Background()
		key := staffCredential(t, st)
		lastUse := func() sql.NullInt64 {
			t.Helper()
			var v sql.NullInt64
			if err := plain.QueryRowContext(ctx, "SELECT last_used_at FROM api_keys WHERE id = '"+string(key.ID)+"'").Scan(&v); err != nil {
				t.Fatal(err)
			}
			return v
		}
		stamp := func(at time.Time) {
			st.NoteAPIKeyUse(key.ID, at, time.Minute)
			store.WaitBackground(st)
		}
		stamp(fixtureNow)
		if v := lastUse(); !v.Valid {
			t.Fatal("the first use was not stamped")
		}
		if _, err := plain.ExecContext(ctx, "UPDATE api_keys SET last_used_at = NULL WHERE id = '"+string(key.ID)+"'"); err != nil {
			t.Fatal(err)
		}
		stamp(fixtureNow.Add(30 * time.Second))
		if v := lastUse(); v.Valid {
			t.Errorf("stamped again %v after half the interval", v.Int64)
		}
		stamp(fixtureNow.Add(2 * time.Minute))
		if v := lastUse(); !v.Valid || v.Int64 != fixtureNow.Add(2*time.Minute).UnixMicro() {
			t.Errorf("a use past the interval stamped %v; want it stamped", v)
		}
	})
}

// On PostgreSQL a transaction that changes a cached table holds the cache generation's row lock
// to its end. A credential's revocation takes it, then the audit chain's head; an import takes it
// before its first audit event (and otherwise at its end), so that one that appends audit events
// and then deletes a lead (deletes of records others may refer to come last) never holds the
// chain's head while waiting for it: the revocation's turn at the chain is not held up, and both
// commit.
func TestImportAndRevocationTakeLocksInOneOrder(t *testing.T) {
	ctx := context.Background()
	url := testdb.URL(t, "postgres")
	st := testdb.OpenURL(t, url)
	testdb.Import(t, st, fixture())
	plain, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	revocation, err := plain.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer revocation.Rollback()
	if _, err := revocation.ExecContext(ctx, "UPDATE api_keys SET revoked_at = 1 WHERE id = '"+string(id(111))+"'"); err != nil {
		t.Fatal(err)
	}
	imported := make(chan error, 1)
	go func() {
		ds := &dataset.Dataset{
			AuditEvents: []domain.AuditEvent{{ID: id(9100), At: fixtureNow, ActorUserID: staffUser, Action: "principal.decrypt", TargetID: string(principalA), Outcome: domain.OutcomeGranted}},
			Deletes:     map[string][]domain.ID{"leads": {leadNotSet}},
		}
		_, err := dataset.ImportWith(ctx, st, ds, nil, dataset.Options{Upsert: true})
		imported <- err
	}()
	time.Sleep(300 * time.Millisecond) // the import gets as far as the locks let it
	headCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var seq int64
	if err := revocation.QueryRowContext(headCtx, "SELECT seq FROM audit_chain_head()").Scan(&seq); err != nil {
		t.Fatalf("the revocation's turn at the audit chain: %v", err)
	}
	if err := revocation.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-imported; err != nil {
		t.Errorf("the import beside the revocation: %v", err)
	}
}
