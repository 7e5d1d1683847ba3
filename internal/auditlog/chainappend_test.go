package auditlog_test

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"testing"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/testdb"
)

// On PostgreSQL the audit writer appends a group in one statement after the head it committed
// last. When another replica appended between two of its groups, that head is stale: the group
// is appended after the chain's real head instead, and the two stores keep one chain.
func TestAuditWriterFollowsAHeadMovedByAnotherReplica(t *testing.T) {
	for _, engine := range testdb.PostgresEngines() {
		t.Run(engine, func(t *testing.T) {
			url := testdb.URL(t, engine)
			a, b := testdb.OpenURL(t, url), testdb.OpenURL(t, url)
			auditEvents(t, a, 0, 2) // a knows the head after its own groups
			auditEvents(t, b, 2, 1) // b moves it
			auditEvents(t, a, 3, 2) // a's head is stale for its first group, then its own again
			auditEvents(t, b, 5, 1)
			testdb.WantIntact(t, testdb.VerifyChain(t, a, ""), 6)
		})
	}
}

// The writer's group is one statement (audit_chain_append_tree), waiting here for the chain's lock that
// another transaction holds. Its connection ends before any answer, and nothing of the group was
// written: the group is appended again in a transaction on a fresh connection, once, after the
// chain's real head, and so is the next.
func TestAuditWriterRetriesAGroupWhoseConnectionWasLost(t *testing.T) {
	for _, engine := range testdb.PostgresEngines() {
		t.Run(engine, func(t *testing.T) {
			dbURL := testdb.URL(t, engine)
			st := testdb.OpenURL(t, dbURL)
			auditEvents(t, st, 0, 1)

			// Straight to the server, not through a pooler whose few connections the store holds.
			admin, err := sql.Open("pgx", serverURL(t, dbURL))
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close()
			holder, err := admin.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Rollback()
			var seq int64
			if err := holder.QueryRowContext(ctx, `SELECT seq FROM audit_chain_head()`).Scan(&seq); err != nil {
				t.Fatal(err)
			}

			recorded := make(chan error, 1)
			go func() {
				recorded <- st.RecordAudit(context.Background(), domain.AuditEvent{At: fixtureNow, ActorUserID: staffUser,
					Action: "principal.decrypt", TargetID: principalA.String(), Outcome: domain.OutcomeGranted, Detail: "lost"})
			}()
			pid := waitingAppend(t, admin)
			if _, err := admin.ExecContext(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
				t.Fatal(err)
			}
			if err := holder.Rollback(); err != nil {
				t.Fatal(err)
			}
			if err := <-recorded; err != nil {
				t.Fatalf("RecordAudit after its connection was lost: %v", err)
			}

			auditEvents(t, st, 1, 1)
			lost := 0
			for _, e := range verifyEvents(t, st) {
				if e.Detail == "lost" {
					lost++
				}
			}
			if lost != 1 {
				t.Errorf("the group whose connection was lost is in the trail %d times, want once", lost)
			}
			testdb.WantIntact(t, testdb.VerifyChain(t, st, ""), 3)
		})
	}
}

// waitingAppend is the server process of the audit writer's audit_chain_append_tree, once it waits
// for the chain's lock.
func waitingAppend(t *testing.T, admin *sql.DB) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var pid int
		err := admin.QueryRowContext(ctx, `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'SELECT CASE WHEN %THEN audit_chain_append_tree(%'`).Scan(&pid)
		if err == nil {
			return pid
		}
		if err != sql.ErrNoRows {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no audit_chain_append_tree waits for the chain's lock: the writer's group is not one statement")
	return 0
}

// serverURL is dbURL's database on the test's PostgreSQL server, whether dbURL reaches it
// directly or through a pooler.
func serverURL(t *testing.T, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	server, err := url.Parse(os.Getenv(testdb.PostgresURLVar))
	if err != nil {
		t.Fatal(err)
	}
	server.Path = u.Path
	return server.String()
}
