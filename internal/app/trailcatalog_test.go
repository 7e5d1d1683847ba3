package app

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"backoffice/internal/auditlog"
	"backoffice/internal/checkpoint"
	"backoffice/internal/dataset"
	"backoffice/internal/testdb"
)

// The database attacker's catalog table (docs/compliance.md#the-trails-tables-as-the-migrations-made-them):
// one test holds it. Its cases come from the database's catalog, not from a list: every table of
// the trail (every table whose name begins with audit, as the migrations made them) gets each kind
// of object an attacker could attach to it to make events vanish as they are written (a trigger
// before and after each of insert, update and delete; a view renamed into its place with an
// INSTEAD OF trigger; on PostgreSQL also a rule, and a policy with row-level security forced), and
// every function of the trail (PostgreSQL) a search path of the attacker's. Each is made by
// direct SQL on a copy of a prepared database under a running service whose start found nothing:
// a decrypt then answers an SSN only with its event in the trail's real table (the append's own
// check), its next checkpoint must sign nothing and name it, a decrypt must answer 503 unavailable (naming
// nothing), /readyz 503 not_ready, and serve started again must name it in its error line. The
// false-refusal side: the database as migrated, with an index added, and after ANALYZE, must pass.

var updateTrailAttacks = flag.Bool("update-trail-attacks", false, "rewrite testdata/trail-catalog-attacks.golden and its table in docs/compliance.md from this run (needs PostgreSQL)")

const (
	trailAttacksGolden     = "testdata/trail-catalog-attacks.golden"
	trailAttacksTableStart = "<!-- The table below is written by TestTrailCatalogAttacks (internal/app) from testdata/trail-catalog-attacks.golden: do not edit it by hand. -->"
	trailAttacksTableEnd   = "<!-- End of the table TestTrailCatalogAttacks writes. -->"
)

// trailAttack is one change of the trail's catalog.
type trailAttack struct {
	target string // a table or function of the trail; "" for the checks of no false refusal
	kind   string
	stmts  []string
	// legit: an operator's change, which must find nothing.
	legit bool
}

func (a trailAttack) key() string { return cmp.Or(a.target, "-") + "\t" + a.kind }

// trailAttacks makes the cases from the catalog of the prepared database db.
func trailAttacks(t *testing.T, engine string, db *sql.DB) []trailAttack {
	t.Helper()
	ctx := context.Background()
	names := func(query string) []string {
		rows, err := db.QueryContext(ctx, query)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			out = append(out, n)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	cases := []trailAttack{
		{kind: "none: as migrated", legit: true},
		{kind: "an index added", stmts: []string{`CREATE INDEX zz ON audit_events(action, seq)`}, legit: true},
		{kind: "statistics gathered (ANALYZE)", stmts: []string{`ANALYZE`}, legit: true},
	}
	switch engine {
	case "sqlite":
		for _, tb := range names(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'audit%' ORDER BY name`) {
			for _, when := range []string{"BEFORE", "AFTER"} {
				for _, op := range []string{"INSERT", "UPDATE", "DELETE"} {
					body := `SELECT RAISE(IGNORE);`
					if when == "AFTER" && op != "DELETE" {
						body = `DELETE FROM ` + tb + ` WHERE rowid = NEW.rowid;`
					} else if when == "AFTER" {
						body = `SELECT 1;`
					}
					cases = append(cases, trailAttack{target: tb, kind: "trigger " + when + " " + op,
						stmts: []string{`CREATE TRIGGER zz ` + when + ` ` + op + ` ON ` + tb + ` BEGIN ` + body + ` END`}})
				}
			}
			cases = append(cases, trailAttack{target: tb, kind: "a view in its place, with an INSTEAD OF INSERT trigger", stmts: []string{
				`ALTER TABLE ` + tb + ` RENAME TO zz_table`,
				`CREATE VIEW ` + tb + ` AS SELECT * FROM zz_table`,
				`CREATE TRIGGER zz INSTEAD OF INSERT ON ` + tb + ` BEGIN SELECT 1; END`}})
		}
	default:
		drop := `CREATE FUNCTION zz_drop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`
		remove := `CREATE FUNCTION zz_remove() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN EXECUTE format('DELETE FROM %I WHERE id = $1', TG_TABLE_NAME) USING NEW.id; RETURN NULL; END $$`
		for _, tb := range names(`SELECT relname::text FROM pg_class WHERE relkind = 'r' AND relname LIKE 'audit%' AND pg_table_is_visible(oid) ORDER BY relname`) {
			for _, when := range []string{"BEFORE", "AFTER"} {
				for _, op := range []string{"INSERT", "UPDATE", "DELETE"} {
					fn, fnName := drop, "zz_drop"
					if when == "AFTER" && op != "DELETE" {
						fn, fnName = remove, "zz_remove"
					}
					cases = append(cases, trailAttack{target: tb, kind: "trigger " + when + " " + op, stmts: []string{fn,
						`CREATE TRIGGER zz ` + when + ` ` + op + ` ON ` + tb + ` FOR EACH ROW EXECUTE FUNCTION ` + fnName + `()`}})
				}
			}
			cases = append(cases,
				trailAttack{target: tb, kind: "rule ON INSERT DO INSTEAD NOTHING", stmts: []string{`CREATE RULE zz AS ON INSERT TO ` + tb + ` DO INSTEAD NOTHING`}},
				trailAttack{target: tb, kind: "a policy, row-level security forced", stmts: []string{
					`ALTER TABLE ` + tb + ` ENABLE ROW LEVEL SECURITY`,
					`ALTER TABLE ` + tb + ` FORCE ROW LEVEL SECURITY`,
					`CREATE POLICY zz ON ` + tb + ` FOR SELECT USING (false)`}},
				trailAttack{target: tb, kind: "a view in its place, with an INSTEAD OF INSERT trigger", stmts: []string{drop,
					`ALTER TABLE ` + tb + ` RENAME TO zz_table`,
					`CREATE VIEW ` + tb + ` AS SELECT * FROM zz_table`,
					`CREATE TRIGGER zz INSTEAD OF INSERT ON ` + tb + ` FOR EACH ROW EXECUTE FUNCTION zz_drop()`}})
		}
		for _, fn := range names(`SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.proname LIKE 'audit%' AND pg_function_is_visible(p.oid) ORDER BY 1`) {
			cases = append(cases, trailAttack{target: strings.SplitN(fn, "(", 2)[0], kind: "a search path of the attacker's (SET search_path)",
				stmts: []string{`CREATE SCHEMA zz`, `ALTER FUNCTION ` + fn + ` SET search_path = zz, public`}})
		}
	}
	return cases
}

func TestTrailCatalogAttacks(t *testing.T) {
	got := map[string]map[string][]string{} // engine → case → cells
	var mu sync.Mutex
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ring := testdb.Ring(t)
			prepared := testdb.URL(t, engine)
			st := testdb.OpenURL(t, prepared)
			importDataset(t, st, testDataset(1), ring)
			cases := trailAttacks(t, engine, testdb.SQL(t, prepared))
			st.Close()
			outcomes := make([][]string, len(cases))
			// Every case is queued before the workers start: a worker that a failed case ends
			// (t.Fatal) leaves the others to drain the queue, and nothing waits on it.
			work := make(chan int, len(cases))
			for i := range cases {
				work <- i
			}
			close(work)
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for i := range work {
						outcomes[i] = runTrailAttack(t, engine, testdb.Copy(t, engine, prepared), cases[i])
					}
				})
			}
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			got[engine] = map[string][]string{}
			for i, c := range cases {
				got[engine][c.key()] = outcomes[i]
			}
		})
	}
	checkTrailAttacksGolden(t, got)
}

// runTrailAttack makes the change on the database at url under a running service whose start
// found nothing, and says what followed: what its next checkpoint did, a decrypt's answer,
// /readyz's, and what serve started again found.
func runTrailAttack(t *testing.T, engine, url string, a trailAttack) []string {
	t.Helper()
	ctx := context.Background()
	ring := testdb.Ring(t)
	st := testdb.OpenURL(t, url)
	var logs lockedBuffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	if err := checkTrailCatalog(ctx, st, log); err != nil || strings.Contains(logs.String(), "ERROR") {
		t.Fatalf("%s: the start on the prepared database: %v %s", a.key(), err, logs.String())
	}
	srv, _ := serveAPI(t, st, ring)
	c, err := newCheckpointer("", st, ring, log)
	if err != nil {
		t.Fatal(err)
	}
	attacker := testdb.SQL(t, url)
	granted := func(table string) int64 {
		return column[int64](t, attacker, `SELECT count(*) FROM `+table+` WHERE action = 'principal.decrypt' AND outcome = 'granted'`)[0]
	}
	before, real := granted("audit_events"), "audit_events"
	if a.target == "audit_events" && strings.HasPrefix(a.kind, "a view in its place") {
		real = "zz_table" // where the attack renames the trail's table
	}
	for _, stmt := range a.stmts {
		if _, err := attacker.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %s: %v", a.key(), stmt, err)
		}
	}
	if !a.legit {
		// A decrypt before any check but the append's own: an SSN only with its event in the
		// trail's real table.
		status, _, err := get(t, srv, decryptPath(testPrincipal(0)), "Api-Key "+testStaffKey)
		if err != nil {
			t.Fatal(err)
		}
		if served, landed := status == http.StatusOK, granted(real)-before; served && landed != 1 || !served && landed != 0 {
			t.Errorf("%s: a decrypt under the change answered %d, and %d granted events landed", a.key(), status, landed)
		}
	}
	// The check before the next checkpoint finds it; from then on the trail is held.
	signErr := c.sign(ctx)
	status, body, err := get(t, srv, decryptPath(testPrincipal(0)), "Api-Key "+testStaffKey)
	if err != nil {
		t.Fatal(err)
	}
	decrypt := fmt.Sprint(status)
	if status != http.StatusOK {
		var e struct {
			Status       int
			Code, Detail string
		}
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatalf("%s: decrypt: %s", a.key(), body)
		}
		decrypt += " " + e.Code
		if strings.Contains(e.Detail, "zz") || a.target != "" && strings.Contains(e.Detail, a.target) {
			t.Errorf("%s: the decrypt's answer names what was found: %s", a.key(), body)
		}
	}
	// and the checkpoint after the decrypt, which has an event to sign.
	if signErr == nil {
		signErr = c.sign(ctx)
	}
	checkpoint := fmt.Sprintf("signed seq %d", c.signed)
	if signErr != nil {
		checkpoint = "not signed"
		if !strings.Contains(signErr.Error(), "zz") && !strings.Contains(signErr.Error(), a.target) {
			t.Errorf("%s: the checkpointer's error names nothing found: %v", a.key(), signErr)
		}
	}
	status, _, err = get(t, srv, "/readyz", "")
	if err != nil {
		t.Fatal(err)
	}
	readyz := fmt.Sprint(status)
	// serve started again on the database as it now is.
	again := testdb.OpenAsIs(t, url)
	var restart lockedBuffer
	if err := checkTrailCatalog(ctx, again, slog.New(slog.NewJSONHandler(&restart, nil))); err != nil {
		t.Fatalf("%s: serve's start: %v", a.key(), err)
	}
	found := "nothing"
	if err := again.TrailCatalogHeld(); err != nil {
		found = strings.Join(err.(*auditlog.TrailCatalogError).Findings, "; ")
		if !strings.Contains(restart.String(), `"level":"ERROR"`) || !strings.Contains(restart.String(), "the audit trail's tables are not what the migrations made") {
			t.Errorf("%s: serve's start logged no error line: %s", a.key(), restart.String())
		}
	}
	if a.legit != (found == "nothing") {
		t.Errorf("%s: serve's start found %s", a.key(), found)
	}
	return []string{found, checkpoint, decrypt, readyz}
}

// checkTrailAttacksGolden compares the outcomes with the golden file, or, with
// -update-trail-attacks, writes it and the table in docs/compliance.md.
func checkTrailAttacksGolden(t *testing.T, got map[string]map[string][]string) {
	t.Helper()
	if *updateTrailAttacks {
		if got["sqlite"] == nil || got["postgres"] == nil {
			t.Fatal("-update-trail-attacks needs both engines: set " + testdb.PostgresURLVar)
		}
		var b strings.Builder
		for _, engine := range []string{"sqlite", "postgres"} {
			keys := make([]string, 0, len(got[engine]))
			for k := range got[engine] {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				fmt.Fprintf(&b, "%s\t%s\t%s\n", engine, k, strings.Join(got[engine][k], "\t"))
			}
		}
		if err := os.WriteFile(trailAttacksGolden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		doc := readFile(t, threatDoc)
		start, end := strings.Index(doc, trailAttacksTableStart), strings.Index(doc, trailAttacksTableEnd)
		if start < 0 || end < start {
			t.Fatalf("%s has no place for the table", threatDoc)
		}
		doc = doc[:start+len(trailAttacksTableStart)] + "\n\n" + trailAttacksTable(t) + "\n" + doc[end:]
		if err := os.WriteFile(threatDoc, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readTrailAttacksGolden(t)
	for _, engine := range []string{"sqlite", "postgres"} {
		if got[engine] == nil {
			continue
		}
		for key, cells := range want[engine] {
			if g, ok := got[engine][key]; !ok {
				t.Errorf("%s: %s: in %s, not made by this run", engine, key, trailAttacksGolden)
			} else if !slices.Equal(g, cells) {
				t.Errorf("%s: %s:\n got  %q\n want %q", engine, key, g, cells)
			}
		}
		for key := range got[engine] {
			if _, ok := want[engine][key]; !ok {
				t.Errorf("%s: %s: a change not in %s: run with -update-trail-attacks and read the table", engine, key, trailAttacksGolden)
			}
		}
	}
}

// readTrailAttacksGolden reads the golden file: engine → target and kind → cells.
func readTrailAttacksGolden(t *testing.T) map[string]map[string][]string {
	t.Helper()
	out := map[string]map[string][]string{}
	for line := range strings.Lines(readFile(t, trailAttacksGolden)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(f) != 7 {
			t.Fatalf("%s: %q", trailAttacksGolden, line)
		}
		if out[f[0]] == nil {
			out[f[0]] = map[string][]string{}
		}
		out[f[0]][f[1]+"\t"+f[2]] = f[3:]
	}
	return out
}

// trailAttacksTable renders the golden file as docs/compliance.md shows it: a line per engine
// and change, the checks of no false refusal first.
func trailAttacksTable(t *testing.T) string {
	t.Helper()
	g := readTrailAttacksGolden(t)
	var b strings.Builder
	b.WriteString("| Engine | Object | Change | serve's start finds | the next checkpoint | a decrypt | /readyz |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, engine := range []string{"sqlite", "postgres"} {
		keys := make([]string, 0, len(g[engine]))
		for k := range g[engine] {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int {
			control := func(k string) int {
				if strings.HasPrefix(k, "-\t") {
					return 0
				}
				return 1
			}
			return cmp.Or(cmp.Compare(control(a), control(b)), cmp.Compare(a, b))
		})
		name := map[string]string{"sqlite": "SQLite", "postgres": "PostgreSQL"}[engine]
		for _, k := range keys {
			target, kind, _ := strings.Cut(k, "\t")
			if target != "-" {
				target = "`" + target + "`"
			}
			cells := g[engine][k]
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", name, target, kind, cells[0], cells[1], cells[2], cells[3])
		}
	}
	return b.String()
}

// The table in docs/compliance.md is the golden file's: what the test last found.
func TestTrailAttacksTableIsTheTests(t *testing.T) {
	doc := readFile(t, threatDoc)
	start, end := strings.Index(doc, trailAttacksTableStart), strings.Index(doc, trailAttacksTableEnd)
	if start < 0 || end < start {
		t.Fatalf("%s has no place for the table", threatDoc)
	}
	if got, want := strings.TrimSpace(doc[start+len(trailAttacksTableStart):end]), strings.TrimSpace(trailAttacksTable(t)); got != want {
		t.Errorf("the table in %s is not the one %s makes: run TestTrailCatalogAttacks with -update-trail-attacks", threatDoc, trailAttacksGolden)
	}
}

// keys rewrap anchors only a trail whose tables are what the migrations made: with a trigger that
// drops events on the trail it refuses (exit 3), naming it, and changes nothing.
func TestRewrapRefusesATrailHeldForItsCatalog(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		stmts := map[string][]string{
			"sqlite": {`CREATE TRIGGER zz BEFORE INSERT ON audit_events BEGIN SELECT RAISE(IGNORE); END`},
		}[engine]
		if stmts == nil {
			stmts = []string{`CREATE FUNCTION zz_drop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`,
				`CREATE TRIGGER zz BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION zz_drop()`}
		}
		sqlOn(t, url, stmts...)
		c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2", "k1")
		_, _, err := c.run("keys", "rewrap")
		if !errors.Is(err, ErrCannotCheck) || !strings.Contains(err.Error(), "found: trigger zz on audit_events") {
			t.Fatalf("keys rewrap: %v; want it refused, naming trigger zz", err)
		}
		if status := c.mustRun("keys", "status"); !strings.Contains(status, "linked under key k1") {
			t.Errorf("keys status after the refused rewrap:\n%s", status)
		}
	})
}

// serve, started on a trail with a trigger that drops events, serves but records nothing: its
// error line names the trigger, a decrypt answers 503 unavailable (no SSN), /readyz 503
// not_ready, and nothing is signed, the last checkpoint when it stops included.
func TestServeHoldsATrailWithAnotherCatalog(t *testing.T) {
	e := newTestEnv(t)
	if _, _, err := e.run("import", e.writeDataset("demo.json", importableDemo(time.Now().UTC()))); err != nil {
		t.Fatal(err)
	}
	sqlOn(t, e.vars["BACKOFFICE_DATABASE_URL"], `CREATE TRIGGER zz BEFORE INSERT ON audit_events BEGIN SELECT RAISE(IGNORE); END`)
	file := filepath.Join(e.dir, "checkpoints.jsonl")
	e.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = file
	addr := freeAddr(t)
	_, stderr, stop := background(func(k string) string { return e.vars[k] }, "serve", "--addr", addr)
	call := func(path string) (int, string) {
		status, body := getWhenServed(t, addr, path)
		if status == 0 {
			t.Fatalf("serve does not answer:\n%s", stderr)
		}
		return status, string(body)
	}
	status, body := call("/v1/crm/leads/" + string(demoLead) + "/principals/" + string(demoPrincipal) + "/decrypt/ssn")
	if status != http.StatusServiceUnavailable || !strings.Contains(body, `"code":"unavailable"`) || strings.Contains(body, "zz") {
		t.Errorf("decrypt: %d %s", status, body)
	}
	if status, body := call("/readyz"); status != http.StatusServiceUnavailable || !strings.Contains(body, "the audit trail's tables are not what the migrations made") {
		t.Errorf("readyz: %d %s", status, body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	logs := stderr.String()
	if !strings.Contains(logs, `"level":"ERROR","msg":"the audit trail's tables are not what the migrations made`) || !strings.Contains(logs, `"found":["found: trigger zz on audit_events"]`) {
		t.Errorf("serve's log does not name the trigger in an error line:\n%s", logs)
	}
	if read, err := checkpoint.ReadFile(file); err != nil || len(read.Entries) != 0 {
		t.Errorf("checkpoints signed over the held trail: %+v, %v", read.Entries, err)
	}
}

// Every command other than serve that writes to the store refuses a trail whose tables are not
// what the migrations made, naming what it found, and writes nothing; audit verify answers that it
// cannot check (exit 3), naming it, never intact. serve serves with the trail held
// (TestServeHoldsATrailWithAnotherCatalog); keys rewrap refuses (TestRewrapRefusesATrailHeldForItsCatalog).
func TestCommandsRefuseATrailHeldForItsCatalog(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, _ string) {
		stmts := []string{`CREATE TRIGGER zz BEFORE INSERT ON audit_events BEGIN SELECT RAISE(IGNORE); END`}
		if engine != "sqlite" {
			stmts = []string{`CREATE FUNCTION zz_drop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`,
				`CREATE TRIGGER zz BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION zz_drop()`}
		}
		keys := listRow(t, c.mustRun("apikey", "list", "--user", string(testStaff)), "-")
		file := filepath.Join(t.TempDir(), "dataset.json")
		f, err := os.Create(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := dataset.Write(f, testDataset(1)); err != nil {
			t.Fatal(err)
		}
		f.Close()
		sqlOn(t, url, stmts...)
		db := testdb.SQL(t, url)
		count := func(table string) int64 { return column[int64](t, db, `SELECT count(*) FROM `+table)[0] }
		events, apiKeys, sessions := count("audit_events"), count("api_keys"), count("sessions")
		const found = "found: trigger zz on audit_events"
		for _, args := range [][]string{
			{"apikey", "create", "--user", string(testStaff)},
			{"apikey", "revoke", keys[0]},
			{"session", "create", "--user", string(testStaff), "--ttl", "1h"},
			{"user", "grant", string(testStaff), "principals.decrypt"},
			{"user", "disable", string(testStaff)},
			{"import", file},
		} {
			_, _, err := c.run(args...)
			if !errors.Is(err, errTrailHeld) || !strings.Contains(err.Error(), found) || !strings.Contains(err.Error(), "nothing was written") {
				t.Errorf("backoffice %s: %v; want it refused, naming %q", strings.Join(args, " "), err, found)
			}
		}
		if e, k, s := count("audit_events"), count("api_keys"), count("sessions"); e != events || k != apiKeys || s != sessions {
			t.Errorf("after the refusals: %d events, %d API keys, %d sessions; before: %d, %d, %d", e, k, s, events, apiKeys, sessions)
		}
		out, _, err := c.run("audit", "verify")
		if !errors.Is(err, ErrCannotCheck) || Report(io.Discard, err) != 3 || !strings.HasPrefix(out, "CANNOT CHECK: ") ||
			!strings.Contains(out, found) || strings.Contains(out, "intact") {
			t.Errorf("audit verify: %v\n%s", err, out)
		}
	})
}
