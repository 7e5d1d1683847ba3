package store_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"
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

	t.Run("document delete through another store", func(t *testing.T) {
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
		if n := store.CachedReads(served); n != 1 {
			t.Errorf("after a delete elsewhere the cache holds %d reads; want only the one read since", n)
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

// A request whose reads share one check (domain.ShareFreshness) sees its own write: the write
// makes the next read check the database again.
func TestRequestSeesItsOwnWrite(t *testing.T) {
	served, _, _ := twoStores(t)
	req := domain.ShareFreshness(context.Background())
	c := staffCredential(t, served)
	if got, err := served.Credential(req, domain.CredentialAPIKey, c.Hash); err != nil || got.RevokedAt != nil {
		t.Fatalf("before the revocation: %+v, %v", got, err)
	}
	if _, ok := domain.FreshnessOf(req).Version(); !ok {
		t.Fatal("the request's read made no check to share")
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
	if _, err := other.DB().ExecContext(ctx, "VACUUM INTO ?", replacement); err != nil {
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
