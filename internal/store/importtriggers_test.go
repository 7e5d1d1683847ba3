package store_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/store/bulkload"
	"backoffice/internal/testdb"
)

// cacheTriggers are the read cache's generation triggers as the database holds them: name to SQL.
func cacheTriggers(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	rows, err := db.Query(`SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%\_cache\_%' ESCAPE '\'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var name, text string
		if err := rows.Scan(&name, &text); err != nil {
			t.Fatal(err)
		}
		got[name] = text
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// plainSQLite opens the file as the sqlite3 shell would, with no busy timeout: a write while
// another connection holds the write lock fails at once.
func plainSQLite(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(url, "sqlite:"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func generation(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(`SELECT n FROM cache_generation`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A SQLite import sets the generation triggers aside in its own transaction (sqlite.BeginImport).
// Attacked from another connection while it runs: every trigger is still there to be seen, and
// no write gets in. After it, committed or failed, they are as the migrations made them, and a
// committed import has moved the generation.
func TestImportSetsTheCacheTriggersAsideUnseen(t *testing.T) {
	ctx := context.Background()
	url := testdb.URL(t, "sqlite")
	st := testdb.OpenURL(t, url)
	testdb.Import(t, st, fixture())
	plain := plainSQLite(t, url)
	want := cacheTriggers(t, plain)
	if len(want) != 39 {
		t.Fatalf("%d cache triggers before the import, want 39 (13 tables, 3 each)", len(want))
	}
	duringImport := func(b *bulkload.Bulk) {
		if got := cacheTriggers(t, plain); !maps.Equal(got, want) {
			t.Errorf("while the import runs another connection sees %d cache triggers, want all %d", len(got), len(want))
		}
		if _, err := plain.ExecContext(ctx, `UPDATE leads SET sa_amex_program = 'retail'`); err == nil {
			t.Error("another connection wrote a cached table while the import had its triggers aside")
		}
		if err := b.AddSAMLogs(testdb.SAMLogs(leadA, 1, 100)); err != nil {
			t.Error(err)
		}
	}

	n := generation(t, plain)
	refused := errors.New("refused")
	if err := st.Load(ctx, func(b *bulkload.Bulk) error { duringImport(b); return refused }); !errors.Is(err, refused) {
		t.Fatalf("failed import: %v", err)
	}
	if got := cacheTriggers(t, plain); !maps.Equal(got, want) {
		t.Errorf("after a failed import: %d cache triggers, want the %d of before", len(got), len(want))
	}
	if generation(t, plain) != n {
		t.Error("a failed import moved the generation")
	}

	if err := st.Load(ctx, func(b *bulkload.Bulk) error { duringImport(b); return nil }); err != nil {
		t.Fatalf("import: %v", err)
	}
	if got := cacheTriggers(t, plain); !maps.Equal(got, want) {
		t.Errorf("after an import: %d cache triggers, want the %d of before", len(got), len(want))
	}
	if generation(t, plain) == n {
		t.Error("an import left the generation where it was")
	}
}

const killedImportVar = "BACKOFFICE_TEST_KILLED_IMPORT"

// TestKilledImportChild is the import TestKilledImportKeepsTheCacheTriggers kills: it writes logs
// with the triggers aside, says so, and waits.
func TestKilledImportChild(t *testing.T) {
	url := os.Getenv(killedImportVar)
	if url == "" {
		t.Skip("run by TestKilledImportKeepsTheCacheTriggers")
	}
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	st.Load(context.Background(), func(b *bulkload.Bulk) error {
		if err := b.AddSAMLogs(testdb.SAMLogs(leadA, 1, 50_000)); err != nil {
			return err
		}
		fmt.Println("aside")
		select {}
	})
}

// An import killed outright (kill -9) with the triggers aside and its rows written leaves the
// database as it was: every trigger there, and none of its rows.
func TestKilledImportKeepsTheCacheTriggers(t *testing.T) {
	url := testdb.URL(t, "sqlite")
	st := testdb.OpenURL(t, url)
	testdb.Import(t, st, fixture())
	plain := plainSQLite(t, url)
	want := cacheTriggers(t, plain)
	var logs int
	if err := plain.QueryRow(`SELECT count(*) FROM sam_action_logs`).Scan(&logs); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledImportChild$")
	cmd.Env = append(os.Environ(), killedImportVar+"="+url)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A child that never gets there is killed all the same, and the test fails below.
	deadline := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	aside := false
	for lines := bufio.NewScanner(out); !aside && lines.Scan(); {
		aside = lines.Text() == "aside"
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if !aside {
		t.Fatal("the child import ended before it had its rows written with the triggers aside: nothing was killed mid-import")
	}

	if got := cacheTriggers(t, plain); !maps.Equal(got, want) {
		t.Errorf("after kill -9: %d cache triggers, want the %d of before", len(got), len(want))
	}
	var after int
	var check string
	if err := plain.QueryRow(`SELECT count(*) FROM sam_action_logs`).Scan(&after); err != nil || after != logs {
		t.Errorf("after kill -9: %d logs (%v), want the %d of before", after, err, logs)
	}
	if err := plain.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check: %q, %v", check, err)
	}
}

// Statements a serving store prepared before another process's import (the audit writer's, the
// cached reads', a transaction's) still run after it, though the import moved the schema's
// version: SQLite prepares them again.
func TestStatementsOutliveAnImportsSchemaChange(t *testing.T) {
	ctx := context.Background()
	served, other, _ := twoStores(t)
	staffCredential(t, served)
	if err := served.RecordAudit(ctx, event("principal.decrypt", principalA)); err != nil {
		t.Fatal(err)
	}
	ds := &dataset.Dataset{SAMActionLogs: []domain.SAMActionLog{samLog(9001, leadA, fixtureNow.Add(time.Hour))}}
	if _, err := dataset.Import(ctx, other, ds, nil); err != nil {
		t.Fatal(err)
	}
	if err := served.RecordAudit(ctx, event("principal.decrypt", principalA)); err != nil {
		t.Errorf("audit event after an import elsewhere: %v", err)
	}
	staffCredential(t, served)
	if err := served.RevokeAPIKey(ctx, id(111), fixtureNow, event("api_key.revoke", id(111))); err != nil {
		t.Errorf("revocation after an import elsewhere: %v", err)
	}
	if logs, _, err := store.ListSAMActionLogs(ctx, served, leadA, 1, 1); err != nil || len(logs) != 1 || logs[0].ID != id(9001) {
		t.Errorf("page after an import elsewhere: %v, %v; want the imported log first", logs, err)
	}
}

// On PostgreSQL the triggers leave the cache generation alone inside an import, which moves it
// itself just before it commits (postgres.BeginImport): moving it takes its row lock to the end
// of the transaction, and a revocation on another replica, which changes a cached table, would
// wait for the whole import. It commits while the import is still open; what the import wrote is
// seen by every replica's next read once the import commits, not before.
func TestRevocationsDoNotWaitForAnImport(t *testing.T) {
	ctx := context.Background()
	url := testdb.URL(t, "postgres")
	importer := testdb.OpenURL(t, url)
	testdb.Import(t, importer, fixture())
	replica := testdb.OpenURL(t, url)
	replica.SetChainSigner(testdb.Ring(t))
	total := func() int64 {
		t.Helper()
		_, n, err := store.ListSAMActionLogs(ctx, replica, leadA, 1, 20)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := total()

	written, release, imported := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		imported <- importer.Load(ctx, func(b *bulkload.Bulk) error {
			if err := b.AddSAMLogs(testdb.SAMLogs(leadA, 1, 100)); err != nil {
				return err
			}
			close(written)
			<-release
			return nil
		})
	}()
	select {
	case <-written:
	case err := <-imported:
		t.Fatalf("the import ended before it was held open: %v", err)
	}
	// A hang, not a duration, is what fails here: the revocation would wait for the import's end.
	revocation, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := replica.RevokeAPIKey(revocation, id(111), fixtureNow, event("api_key.revoke", id(111)))
	if err != nil {
		t.Errorf("a revocation beside an open import: %v", err)
	}
	if c := staffCredential(t, replica); err == nil && c.RevokedAt == nil {
		t.Error("the revoked key still reads as not revoked")
	}
	if n := total(); n != before {
		t.Errorf("before the import commits the replica reads %d logs, want the %d of before", n, before)
	}
	close(release)
	if err := <-imported; err != nil {
		t.Fatal(err)
	}
	if n := total(); n != before+100 {
		t.Errorf("after the import the replica reads %d logs, want %d", n, before+100)
	}
}

// The triggers owe the generation a move under the import setting, and the move is made as the
// transaction commits whatever the transaction did in between: it removed the row that records
// the move owed, it had its deferred constraints run at once (as the audit writer's read-back
// has them), it wrote a row for the move owed of a transaction to come (and rewrote it under
// another's key). The revoked key is refused on the next read each time, and no row that records
// a move owed outlives its transaction.
func TestTheImportSettingNeverSkipsTheGeneration(t *testing.T) {
	ctx := context.Background()
	st, plain := engineStore(t, "postgres")
	revoke := "UPDATE api_keys SET revoked_at = 1 WHERE id = '" + string(id(111)) + "'"
	unrevoke := "UPDATE api_keys SET revoked_at = NULL WHERE id = '" + string(id(111)) + "'"
	const (
		plant = `INSERT INTO cache_generation_owed SELECT (pg_current_xact_id()::text::bigint + k)::text::xid8 FROM generate_series(1, 1000) AS k`
		rekey = `UPDATE cache_generation_owed SET xid = (xid::text::bigint + 1000)::text::xid8`
	)
	for _, c := range []struct {
		what       string
		statements []string
	}{
		{"a revocation", []string{revoke}},
		{"a revocation that then removes the move it owes", []string{revoke, `DELETE FROM cache_generation_owed`}},
		{"a revocation after SET CONSTRAINTS ALL IMMEDIATE", []string{`SET CONSTRAINTS ALL IMMEDIATE`, revoke}},
		{"a revocation after rows owing moves for transactions to come", []string{plant, rekey, revoke}},
	} {
		if _, err := plain.ExecContext(ctx, unrevoke); err != nil {
			t.Fatal(err)
		}
		if staffCredential(t, st).RevokedAt != nil { // and now cached
			t.Fatalf("%s: the key reads as revoked before", c.what)
		}
		n := generation(t, plain)
		if err := underImportSetting(ctx, plain, c.statements...); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if generation(t, plain) == n {
			t.Errorf("%s under the import setting left the generation where it was", c.what)
		}
		if staffCredential(t, st).RevokedAt == nil {
			t.Errorf("%s under the import setting: the revoked key still reads as not revoked", c.what)
		}
		if owed := owedMoves(t, plain); owed != 0 {
			t.Errorf("%s under the import setting: %d rows of moves owed outlive it", c.what, owed)
		}
	}
}

// owedMoves counts the rows of moves of the generation owed (PostgreSQL's migration 0022).
func owedMoves(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM cache_generation_owed`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A PostgreSQL import with no audit events leaves the moving of the generation to the triggers,
// which owe it for what the import wrote and make it as the import commits: not before (the
// generation's row is free for any other writer while the import is open), not when it rolls
// back, and with no row of a move owed left after either.
func TestImportMovesTheGenerationAsItCommits(t *testing.T) {
	ctx := context.Background()
	st, plain := engineStore(t, "postgres")
	var moves int
	store.CountGenerationMoves(st, &moves)
	n := generation(t, plain)
	refused := errors.New("refused")
	err := st.Load(ctx, func(b *bulkload.Bulk) error {
		if err := b.AddSAMLogs(testdb.SAMLogs(leadA, 1, 100)); err != nil {
			return err
		}
		return refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("failed import: %v", err)
	}
	if generation(t, plain) != n || owedMoves(t, plain) != 0 {
		t.Errorf("a failed import: generation %d → %d, %d rows of moves owed; want it unmoved and none", n, generation(t, plain), owedMoves(t, plain))
	}

	err = st.Load(ctx, func(b *bulkload.Bulk) error {
		if err := b.AddSAMLogs(testdb.SAMLogs(leadA, 101, 100)); err != nil {
			return err
		}
		// What a writer of a cached table beside the import would take first.
		if _, err := plain.ExecContext(ctx, `SELECT n FROM cache_generation WHERE id = 1 FOR UPDATE NOWAIT`); err != nil {
			t.Errorf("the generation's row while the import is open: %v; want it free", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if generation(t, plain) == n {
		t.Error("the import's commit left the generation where it was")
	}
	if owed := owedMoves(t, plain); owed != 0 {
		t.Errorf("%d rows of moves owed outlive the import", owed)
	}
	if moves != 0 {
		t.Errorf("the import moved the generation itself %d times; the triggers' move owed is the one", moves)
	}
}
