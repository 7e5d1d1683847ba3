package auditlog_test

import (
	"errors"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"backoffice/internal/auditlog"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

var updateTrailCatalog = flag.Bool("update-trail-catalog", false, "rewrite each engine's trail-catalog.golden from a freshly migrated database")

// trailCatalogGolden is where each engine keeps what its migrations make of the trail's catalog,
// built into the binary.
var trailCatalogGolden = map[string]string{
	"sqlite":   "../store/sqlite/trail-catalog.golden",
	"postgres": "../store/postgres/trail-catalog.golden",
}

// The expectation built into the binary is what the migrations make: a migration that adds a
// trigger, a rule, a policy or a function to the trail, or changes one, fails here until the
// expectation is written again (-update-trail-catalog), and a reviewer sees the change in it.
func TestTrailCatalogIsTheMigrations(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			st := testdb.Open(t, engine)
			got, want, err := auditlog.TrailCatalog(ctx, st.Trail())
			if err != nil {
				t.Fatal(err)
			}
			if *updateTrailCatalog {
				if err := os.WriteFile(trailCatalogGolden[engine], []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !slices.Equal(got, want) {
				t.Errorf("the trail's catalog as the migrations make it:\n%s\nbuilt into the binary (%s):\n%s\nrun this test with -update-trail-catalog and review the difference",
					strings.Join(got, "\n"), trailCatalogGolden[engine], strings.Join(want, "\n"))
			}
			if !slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, "table\taudit_events\t") }) {
				t.Errorf("the trail's catalog has no table audit_events: %q", got)
			}
			if err := st.CheckTrailCatalog(ctx); err != nil {
				t.Errorf("a freshly migrated database: %v", err)
			}
		})
	}
}

// A difference holds the trail: no event is linked, even once the catalog is put back, and the
// refusal answers as unavailable.
func TestTrailCatalogHoldsTheTrail(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			st := testdb.Open(t, engine)
			db := testdb.SQLOf(t, st)
			trigger := map[string][]string{
				"sqlite": {`CREATE TRIGGER zz BEFORE INSERT ON audit_events BEGIN SELECT RAISE(IGNORE); END`},
				"postgres": {`CREATE FUNCTION zz_drop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`,
					`CREATE TRIGGER zz BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION zz_drop()`},
			}[engine]
			for _, stmt := range trigger {
				if _, err := db.ExecContext(ctx, stmt); err != nil {
					t.Fatal(err)
				}
			}
			err := st.CheckTrailCatalog(ctx)
			var found *auditlog.TrailCatalogError
			if !errors.As(err, &found) || !slices.Contains(found.Findings, "found: trigger zz on audit_events") {
				t.Fatalf("CheckTrailCatalog = %v, want it to name trigger zz on audit_events", err)
			}
			if _, err := db.ExecContext(ctx, `DROP TRIGGER zz`+map[string]string{"sqlite": "", "postgres": " ON audit_events"}[engine]); err != nil {
				t.Fatal(err)
			}
			if err := st.CheckTrailCatalog(ctx); !errors.As(err, &found) {
				t.Errorf("CheckTrailCatalog after the trigger was dropped = %v, want it still held", err)
			}
			err = st.RecordAudit(ctx, domain.AuditEvent{ActorUserID: testdb.FixtureID(1), Action: "principal.decrypt", TargetID: "p", Outcome: domain.OutcomeGranted, Detail: "field ssn"})
			if e, ok := domain.AsError(err); !ok || e.Kind != domain.KindUnavailable || strings.Contains(e.Detail, "zz") {
				t.Errorf("RecordAudit while held = %v, want unavailable naming nothing found", err)
			}
			if n, err := auditlog.Count(ctx, st.Trail(), "audit_events"); err != nil || n != 0 {
				t.Errorf("events written while held: %d, %v", n, err)
			}
		})
	}
}

// Every append checks the trail's catalog in its own transaction (trailguard.go): a change made
// while the store runs, after a clean check, is met by the next append, which holds the trail and
// writes nothing; a change an operator makes that leaves the catalog as the migrations made it (an
// index; on PostgreSQL the writer's function altered without changing what it does) moves what
// the check compares, and the appends go on.
func TestTheAppendChecksTheTrailCatalog(t *testing.T) {
	record := func(t *testing.T, st *store.Store) error {
		t.Helper()
		return st.RecordAudit(ctx, domain.AuditEvent{ActorUserID: testdb.FixtureID(1), Action: "principal.decrypt",
			TargetID: "p", Outcome: domain.OutcomeGranted, Detail: "field ssn"})
	}
	exec := func(t *testing.T, st *store.Store, stmts ...string) {
		t.Helper()
		for _, stmt := range stmts {
			if _, err := testdb.SQLOf(t, st).ExecContext(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
	}
	for _, engine := range []string{"sqlite", "postgres"} {
		legit := [][]string{{`CREATE INDEX zz_index ON audit_events(action, seq)`}}
		attacks := map[string][]string{
			"a view in the table's place": {`ALTER TABLE audit_events RENAME TO zz_table`,
				`CREATE VIEW audit_events AS SELECT * FROM zz_table`},
		}
		found := map[string]string{"a view in the table's place": "audit_events is a view, not a table"}
		if engine == "postgres" {
			legit = append(legit, []string{`ALTER FUNCTION audit_chain_append_tree COST 101`})
			attacks["the writer's function replaced"] = []string{`CREATE OR REPLACE FUNCTION audit_chain_append_tree(prev_seq BIGINT, prev_hash BYTEA,
				ids TEXT[], ats BIGINT[], actors TEXT[], actions TEXT[], targets TEXT[], outcomes TEXT[],
				details TEXT[], seqs BIGINT[], key_ids TEXT[], hashes BYTEA[],
				tree_ids BIGINT[], tree_hashes BYTEA[], tree_tags BYTEA[], edge_ids BIGINT[], edge_hashes BYTEA[]) RETURNS BIGINT
				LANGUAGE sql AS $$ SELECT cardinality(ids)::bigint $$`}
			found["the writer's function replaced"] = "changed: function audit_chain_append_tree("
			attacks["a table that inherits audit_events"] = []string{`CREATE TABLE zz_child () INHERITS (audit_events)`}
			found["a table that inherits audit_events"] = "zz_child"
			attacks["a table that inherits audit_tree"] = []string{`CREATE TABLE zz_child () INHERITS (audit_tree)`}
			found["a table that inherits audit_tree"] = "zz_child"
		} else {
			attacks["a trigger"] = []string{`CREATE TRIGGER zz BEFORE INSERT ON audit_events BEGIN SELECT RAISE(IGNORE); END`}
			found["a trigger"] = "found: trigger zz on audit_events"
		}
		t.Run(engine+"/an operator's changes", func(t *testing.T) {
			st := testdb.Open(t, engine)
			if err := st.CheckTrailCatalog(ctx); err != nil {
				t.Fatal(err)
			}
			for _, stmts := range legit {
				for range 2 { // the second append meets what the first remembered
					if err := record(t, st); err != nil {
						t.Fatal(err)
					}
				}
				exec(t, st, stmts...)
			}
			for range 2 {
				if err := record(t, st); err != nil {
					t.Fatalf("an append after %v: %v", legit, err)
				}
			}
			if n, err := auditlog.Count(ctx, st.Trail(), "audit_events"); err != nil || n != 2*len(legit)+2 {
				t.Errorf("%d events, %v; want %d", n, err, 2*len(legit)+2)
			}
		})
		for name, stmts := range attacks {
			t.Run(engine+"/"+name, func(t *testing.T) {
				st := testdb.Open(t, engine)
				if err := st.CheckTrailCatalog(ctx); err != nil {
					t.Fatal(err)
				}
				for range 2 { // the second in one statement on PostgreSQL
					if err := record(t, st); err != nil {
						t.Fatal(err)
					}
				}
				exec(t, st, stmts...)
				err := record(t, st)
				var held *auditlog.TrailCatalogError
				if !errors.As(err, &held) || !strings.Contains(held.Error(), found[name]) {
					t.Fatalf("an append after the change = %v, want the trail held naming %q", err, found[name])
				}
				if e, ok := domain.AsError(err); !ok || e.Kind != domain.KindUnavailable {
					t.Errorf("the append's error answers %v, want unavailable", err)
				}
				if held := st.TrailCatalogHeld(); held == nil || !strings.Contains(held.Error(), found[name]) {
					t.Errorf("TrailCatalogHeld = %v", held)
				}
				table := map[bool]string{true: "zz_table", false: "audit_events"}[strings.Contains(name, "view")]
				if n, err := auditlog.Count(ctx, st.Trail(), table); err != nil || n != 2 {
					t.Errorf("%s holds %d events, %v; want the 2 from before the change", table, n, err)
				}
			})
		}
	}
}
