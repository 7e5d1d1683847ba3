package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/store/bulkload"
	"backoffice/internal/testdb"
)

// copyPairs are the directions the copy is tested in: between the engines both ways, and within
// SQLite (which needs no PostgreSQL, so the copy is tested everywhere).
var copyPairs = [][2]string{{"sqlite", "postgres"}, {"postgres", "sqlite"}, {"sqlite", "sqlite"}}

// copySource is a store holding a row in every table the copy moves: the fixture (credentials'
// hashes, sealed SSNs, documents, notes, SAM logs and their buckets, an audit event), events the
// store chained (the oldest pruned, with its record), a push lease, a push record and an idempotency key.
func copySource(t *testing.T, engine string) *store.Store {
	t.Helper()
	ctx := context.Background()
	st := testdb.Open(t, engine)
	testdb.Import(t, st, testdb.Fixture())
	now := testdb.FixtureNow()
	for i := range 3 {
		if err := st.RecordAudit(ctx, domain.AuditEvent{ID: testdb.FixtureID(1700 + i), At: now, ActorUserID: testdb.StaffUser,
			Action: "principal.decrypt", TargetID: string(testdb.PrincipalA), Outcome: domain.OutcomeGranted, Detail: "field ssn"}); err != nil {
			t.Fatal(err)
		}
	}
	// The oldest event pruned, as the retention policy does: its record is copied too.
	testdb.Prune(t, st, 2)
	if ok, err := st.AcquirePushLease(ctx, testdb.ItemA, "replica-1", now, time.Hour); err != nil || !ok {
		t.Fatalf("lease: %v %v", ok, err)
	}
	rec := domain.PushRecord{LineItemID: testdb.ItemA, Holder: "replica-1", MerchantID: testdb.MerchantA, UserID: testdb.StaffUser,
		TerminalID: "TID/1 A", StartedAt: now, Attempts: 0}
	if err := st.BeginPush(ctx, rec, func(domain.PushRecord) domain.MerchantNote { return domain.MerchantNote{} }); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ClaimPushKey(ctx, testdb.StaffUser, []byte("0123456789abcdef0123456789abcdef"), testdb.ItemA, now, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishPushKey(ctx, testdb.StaffUser, []byte("0123456789abcdef0123456789abcdef"), 200, []byte(`{"id":"x"}`), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	return st
}

// tableRows is every row of table, each column by name, with flags as 0 and 1 on both engines,
// in an order of their own.
func tableRows(t *testing.T, db *sql.DB, table string) []map[string]any {
	t.Helper()
	rows, err := db.Query(`SELECT * FROM ` + table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []map[string]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := map[string]any{}
		for i, c := range cols {
			switch v := vals[i].(type) {
			case bool:
				if v {
					row[c] = int64(1)
				} else {
					row[c] = int64(0)
				}
			case []byte:
				row[c] = fmt.Sprintf("bytes %x", v) // an empty BLOB reads as nil on SQLite, not as NULL
			default:
				row[c] = v
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(out, func(a, b map[string]any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	return out
}

// copiedTables are the tables a copy writes.
func copiedTables() []string {
	return append(bulkload.CopiedTables(), bulkload.GenesisTable)
}

// A copy in either direction moves every row of every table it copies, every column as stored;
// the source holds a row in each, so a table left out fails here.
func TestCopyMovesEveryRowAsStored(t *testing.T) {
	for _, pair := range copyPairs {
		t.Run(pair[0]+"-to-"+pair[1], func(t *testing.T) {
			src := copySource(t, pair[0])
			dst := testdb.Open(t, pair[1])
			srcDB, dstDB := testdb.SQLOf(t, src), testdb.SQLOf(t, dst)
			var generation int64
			if err := dstDB.QueryRow(`SELECT n FROM cache_generation`).Scan(&generation); err != nil {
				t.Fatal(err)
			}
			copied := map[string]int64{}
			if err := src.CopyTo(context.Background(), dst, func(table string, n int64) { copied[table] = n }); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(copiedTables(), slices.Sorted(maps.Keys(copied)), cmp.Transformer("sort", func(s []string) []string { return slices.Sorted(slices.Values(s)) })); diff != "" {
				t.Errorf("tables copied (-want +got):\n%s", diff)
			}
			for _, table := range copiedTables() {
				want := tableRows(t, srcDB, table)
				if len(want) == 0 {
					t.Errorf("%s: the source holds no row: give copySource one", table)
				}
				if copied[table] != int64(len(want)) {
					t.Errorf("%s: copied %d rows, the source holds %d", table, copied[table], len(want))
				}
				if diff := cmp.Diff(want, tableRows(t, dstDB, table)); diff != "" {
					t.Errorf("%s (-source +target):\n%s", table, diff)
				}
			}
			var moved int64
			if err := dstDB.QueryRow(`SELECT n FROM cache_generation`).Scan(&moved); err != nil {
				t.Fatal(err)
			}
			if moved == generation {
				t.Errorf("the target's cache generation is still %d: its read cache would not see the copy", moved)
			}
			// The copy reads as the source does: the chain verifies, the SSN opens, the key works.
			rep, err := dst.VerifyAuditChain(context.Background(), testdb.Ring(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rep.Verified(); err != nil {
				t.Errorf("the copied audit chain does not verify: %v", err)
			}
		})
	}
}

// A target holding rows is refused, and nothing is written to it.
func TestCopyRefusesATargetThatHoldsRows(t *testing.T) {
	for _, pair := range copyPairs {
		t.Run(pair[0]+"-to-"+pair[1], func(t *testing.T) {
			ctx := context.Background()
			src := copySource(t, pair[0])
			dst := testdb.Open(t, pair[1])
			if err := dst.RecordAudit(ctx, domain.AuditEvent{ID: testdb.FixtureID(1800), At: testdb.FixtureNow(), ActorUserID: testdb.StaffUser,
				Action: "principal.decrypt", TargetID: string(testdb.PrincipalA), Outcome: domain.OutcomeGranted, Detail: "field ssn"}); err != nil {
				t.Fatal(err)
			}
			dstDB := testdb.SQLOf(t, dst)
			before := map[string][]map[string]any{}
			for _, table := range copiedTables() {
				before[table] = tableRows(t, dstDB, table)
			}
			err := src.CopyTo(ctx, dst, nil)
			if !errors.Is(err, bulkload.ErrTargetNotEmpty) || !strings.Contains(err.Error(), "audit_events") {
				t.Fatalf("copy into a target with an audit event: %v, want ErrTargetNotEmpty naming audit_events", err)
			}
			for _, table := range copiedTables() {
				if diff := cmp.Diff(before[table], tableRows(t, dstDB, table)); diff != "" {
					t.Errorf("%s changed (-before +after):\n%s", table, diff)
				}
			}
		})
	}
}

// Every table each engine's migrations make is copied or set aside by name, and a table or
// column the copy does not know, in either database, refuses the copy instead of being skipped.
func TestCopyKnowsEveryTable(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			db := testdb.SQLOf(t, testdb.Open(t, engine))
			query := `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`
			if engine == "postgres" {
				query = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`
			}
			rows, err := db.Query(query)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			known := map[string]bool{}
			for _, table := range copiedTables() {
				known[table] = true
			}
			for table := range bulkload.NotCopied() {
				known[table] = true
			}
			for rows.Next() {
				var table string
				if err := rows.Scan(&table); err != nil {
					t.Fatal(err)
				}
				if !known[table] {
					t.Errorf("table %s is neither in bulkload.CopiedTables nor in bulkload.NotCopied", table)
				}
			}
		})
	}
	for _, pair := range copyPairs {
		for _, c := range []struct{ name, side, ddl, want string }{
			{"new table in the source", "source", `CREATE TABLE late_records (id TEXT PRIMARY KEY)`, "late_records"},
			{"new table in the target", "target", `CREATE TABLE late_records (id TEXT PRIMARY KEY)`, "late_records"},
			{"new column in the source", "source", `ALTER TABLE merchants ADD COLUMN late_column TEXT`, "late_column"},
			{"a column no migration could name, on both", "both", `ALTER TABLE merchants ADD COLUMN "name) SELECT 1; --" TEXT`, "no migration makes"},
		} {
			t.Run(pair[0]+"-to-"+pair[1]+"/"+c.name, func(t *testing.T) {
				src := copySource(t, pair[0])
				dst := testdb.Open(t, pair[1])
				for side, st := range map[string]*store.Store{"source": src, "target": dst} {
					if c.side != side && c.side != "both" {
						continue
					}
					if _, err := testdb.SQLOf(t, st).Exec(c.ddl); err != nil {
						t.Fatal(err)
					}
				}
				err := src.CopyTo(context.Background(), dst, nil)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("copy: %v, want a refusal naming %s", err, c.want)
				}
				if rows := tableRows(t, testdb.SQLOf(t, dst), "partners"); len(rows) != 0 {
					t.Errorf("the refused copy wrote %d partners", len(rows))
				}
			})
		}
	}
}
