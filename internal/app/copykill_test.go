package app

import (
	"context"
	"database/sql"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"backoffice/internal/store/bulkload"
	"backoffice/internal/testdb"
)

// copySource makes e's database (of engine) the imported demo with logs SAM action logs more on
// its lead, and an audit trail.
func copySource(t *testing.T, e *testEnv, engine string, logs int) {
	t.Helper()
	e.vars["BACKOFFICE_DATABASE_URL"] = testdb.URL(t, engine)
	ds := importableDemo(time.Now().UTC())
	ds.SAMActionLogs = append(ds.SAMActionLogs, testdb.SAMLogs(demoLead, 0, logs)...)
	if _, _, err := e.run("import", e.writeDataset("source.json", ds)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.run("apikey", "create", "--user", "00000000-0000-4000-8000-000000000101"); err != nil {
		t.Fatal(err)
	}
}

// tableCounts counts the rows of every table a copy writes, on the database of url.
func tableCounts(t *testing.T, db *sql.DB) map[string]int64 {
	t.Helper()
	counts := map[string]int64{}
	for _, table := range append(bulkload.CopiedTables(), bulkload.GenesisTable) {
		var n int64
		if err := db.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		counts[table] = n
	}
	return counts
}

// writeTxOpen tells whether a transaction writes to the database of url now: on SQLite, another
// connection cannot take the write lock; on PostgreSQL, an advisory lock (the import's, which the
// copy takes) is held in the database.
func writeTxOpen(t *testing.T, url string) bool {
	t.Helper()
	ctx := context.Background()
	db := testdb.SQL(t, url)
	if strings.HasPrefix(url, "sqlite:") {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return strings.Contains(err.Error(), "locked") || strings.Contains(err.Error(), "busy")
		}
		conn.ExecContext(ctx, "ROLLBACK")
		return false
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// A copy killed with -9 in the middle, in either direction, leaves the target with none of the
// source's rows (its migrations, committed before the copy began, stay), and a copy run again
// then moves everything.
func TestCopyKilledLeavesTheTargetEmpty(t *testing.T) {
	for _, pair := range [][2]string{{"sqlite", "postgres"}, {"postgres", "sqlite"}} {
		t.Run(pair[0]+"-to-"+pair[1], func(t *testing.T) {
			e := newTestEnv(t)
			// Large enough that the copy is still writing well after it reports its SAM logs:
			// their ids (as many again) and buckets come next.
			copySource(t, e, pair[0], 300_000)
			want := tableCounts(t, testdb.SQL(t, e.vars["BACKOFFICE_DATABASE_URL"]))
			target := testdb.URL(t, pair[1])
			tmp := t.TempDir()
			cmd, in, out := importChild(t, e.vars, tmp, "copy", "--to", target)
			in.Close()
			deadline := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
			waitFor(t, func() string {
				if strings.Contains(out.String(), "copied sam_action_logs: ") {
					return "logs written"
				}
				return ""
			})
			// Killed with its transaction open on the target.
			if !writeTxOpen(t, target) {
				t.Fatalf("the copy holds no write transaction on the target:\n%s", out)
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			deadline.Stop()
			if strings.Contains(out.String(), " rows of ") {
				t.Fatalf("the copy ended before it was killed:\n%s", out)
			}
			t.Logf("killed after:\n%s", out)
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("after kill -9, %d files in the copy's TMPDIR: %v", len(left), left)
			}
			db := testdb.SQL(t, target)
			for table, n := range tableCounts(t, db) {
				if n != 0 && table != bulkload.GenesisTable {
					t.Errorf("after kill -9 the target's %s holds %d rows", table, n)
				}
			}
			var sealed sql.NullString
			if err := db.QueryRow(`SELECT chain_key_id FROM audit_chain_genesis`).Scan(&sealed); err != nil || sealed.Valid {
				t.Errorf("after kill -9 the target's genesis is the source's (%v, %v), not its migration's", sealed, err)
			}

			stdout, _, err := e.run("copy", "--to", target)
			if err != nil {
				t.Fatalf("copy again after the kill: %v", err)
			}
			if !strings.Contains(stdout, " rows of ") {
				t.Errorf("copy again said: %s", stdout)
			}
			if writeTxOpen(t, target) {
				t.Error("a write transaction is open on the target once the copy has ended")
			}
			got := tableCounts(t, db)
			for table, n := range want {
				if got[table] != n {
					t.Errorf("%s: %d rows on the target after the second copy, %d on the source", table, got[table], n)
				}
			}
			e.vars["BACKOFFICE_DATABASE_URL"] = target
			if out, _, err := e.run("audit", "verify"); err != nil {
				t.Errorf("audit verify on the target: %v\n%s", err, out)
			}
		})
	}
}

// copySAMLogsVar, set to a number of SAM action logs, runs TestCopyMemoryAndTime with that many
// (docs/scale.md has its figures for a million).
const copySAMLogsVar = "BACKOFFICE_TEST_COPY_SAM_LOGS"

// The copy's time and peak memory on a database of many SAM action logs, in each direction: the
// copy, in a process of its own, keeps under 200 MiB resident.
func TestCopyMemoryAndTime(t *testing.T) {
	logs, _ := strconv.Atoi(os.Getenv(copySAMLogsVar))
	if logs == 0 {
		t.Skipf("set %s to a number of SAM logs (1000000 for the figures of docs/scale.md)", copySAMLogsVar)
	}
	for _, pair := range [][2]string{{"sqlite", "postgres"}, {"postgres", "sqlite"}} {
		t.Run(pair[0]+"-to-"+pair[1], func(t *testing.T) {
			e := newTestEnv(t)
			copySource(t, e, pair[0], logs)
			target := testdb.URL(t, pair[1])
			cmd, in, out := importChild(t, e.vars, t.TempDir(), "copy", "--to", target)
			in.Close()
			start := time.Now()
			if err := cmd.Wait(); err != nil {
				t.Fatalf("copy: %v\n%s", err, out)
			}
			took := time.Since(start)
			m := regexp.MustCompile(`peak resident:\s+(\d+) kB`).FindStringSubmatch(out.String())
			if m == nil {
				t.Fatalf("no peak in:\n%s", out)
			}
			kb, _ := strconv.Atoi(m[1])
			t.Logf("%s to %s, %d SAM logs: %s, peak resident %d MiB\n%s", pair[0], pair[1], logs, took.Round(100*time.Millisecond), kb/1024, out)
			if kb > 200*1024 && !raceDetector {
				t.Errorf("peak resident %d MiB, over 200 MiB", kb/1024)
			}
		})
	}
}
