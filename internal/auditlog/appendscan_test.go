package auditlog_test

import (
	"database/sql"
	"testing"
	"time"

	"backoffice/internal/testdb"
)

// An append reaches the trail's rows by key, however the trail grew. PostgreSQL plans each
// statement of audit_chain_append_tree once a connection and keeps the plan until the table is
// next analyzed; one made while the tables were a few rows and analyzed as such (autovacuum
// analyzes a new table early) reads the whole table, on every append until then. Here the tables
// are analyzed small and not again (autovacuum off for them), the writer's connections make their
// plans then, and the trail grows under them: the tables' own counters tell how often anything
// read one whole.
func TestAppendsNeverScanTheTrail(t *testing.T) {
	for _, engine := range testdb.PostgresEngines() {
		t.Run(engine, func(t *testing.T) {
			dbURL := testdb.URL(t, engine)
			st := testdb.OpenURL(t, dbURL)
			sqlExec(t, st, `ALTER TABLE audit_events SET (autovacuum_enabled = off)`)
			sqlExec(t, st, `ALTER TABLE audit_tree SET (autovacuum_enabled = off)`)
			auditEvents(t, st, 0, 20)
			sqlExec(t, st, `ANALYZE audit_events, audit_tree`)
			const appends = 1000
			auditEvents(t, st, 20, appends)
			st.Close()
			testdb.TerminateBackends(t, dbURL) // a pooler's server connections too: an ended backend reports its counters
			// Opening the store reads a table whole a few times, however long it is; a kept plan
			// that scans does so on every append.
			scans := trailScans(t, testdb.SQL(t, serverURL(t, dbURL)), 20+appends)
			for _, table := range []string{"audit_events", "audit_tree"} {
				if scans[table] >= appends/10 {
					t.Errorf("%d appends read %s whole %d times: an append's cost grows with the trail", appends, table, scans[table])
				}
			}
		})
	}
}

// trailScans reads, through db, how often each of the trail's tables was read whole, once the
// counters show at least inserted events.
func trailScans(t *testing.T, db *sql.DB, inserted int64) map[string]int64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var events, tree, n int64
		err := db.QueryRowContext(ctx, `SELECT (SELECT seq_scan FROM pg_stat_user_tables WHERE relid = 'audit_events'::regclass),
			(SELECT seq_scan FROM pg_stat_user_tables WHERE relid = 'audit_tree'::regclass),
			(SELECT n_tup_ins FROM pg_stat_user_tables WHERE relid = 'audit_events'::regclass)`).Scan(&events, &tree, &n)
		if err != nil {
			t.Fatal(err)
		}
		if n >= inserted {
			return map[string]int64{"audit_events": events, "audit_tree": tree}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the counters show %d events inserted, not %d", n, inserted)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
