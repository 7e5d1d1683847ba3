package app

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"backoffice/internal/auditlog"
	"backoffice/internal/checkpoint"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// The database attacker's table (docs/compliance.md#the-database-attackers-table): one test holds
// it. Its cases come from the database's catalog, not from a list: every column of every audit
// table (sqlite_schema and pragma_table_info, information_schema on PostgreSQL), each changed to
// a new value, to NULL, to a key id no ring holds and to the value of the next row, on the rows
// that stand for each way the trail proves an event; and every row deleted, copied in at the end,
// copied in before it, removed with the rows after it renumbered to close the gap, moved to the
// end, and swapped with the next. A column or table added later joins by itself.
//
// Each change is made on a copy of one prepared database, under two running serves (one with a
// checkpoints file, one logging its checkpoints only), and followed by a new event, each serve's
// next checkpoint, `keys rewrap` (with and without the file) and `audit verify` (with the file,
// with the database alone, and with the checkpoints the second serve logged). None may exit 0,
// and no checkpoint or anchor made after the change may cover it, but where the table argues why
// (testdata/threat-model.golden holds each row's outcome; docs/compliance.md shows them).

var updateThreatModel = flag.Bool("update-threat-model", false, "rewrite testdata/threat-model.golden and the table in docs/compliance.md from this run (needs PostgreSQL)")

const threatGolden = "testdata/threat-model.golden"

// attackTargets are the rows of audit_events the column changes aim at, by seq, and what proves
// each: the prepared trail (newAttackFixture) has them at these places.
var attackTargets = []struct {
	seq  int64
	what string
}{
	{1, "from before the chain"},
	{3, "linked under a retired key, anchored"},
	{6, "the anchor"},
	{8, "linked under the active key, checkpointed"},
	{11, "the newest"},
}

// attackFixture is the prepared database every case copies.
type attackFixture struct {
	engine string
	url    string // the prepared database: never used by a case, only copied
	file   string // its checkpoints file: one checkpoint, of seq 1 to 9
	// digests are the trail's digest at each seq (index seq-1); ids its events' ids.
	digests [][]byte
	ids     map[domain.ID]bool
	tables  []auditTable
}

// auditTable is an audit table as the catalog describes it.
type auditTable struct {
	name    string
	columns []auditColumn
	// order is its integer unique column (seq, id): rows are named, moved and renumbered by it.
	order string
}

type auditColumn struct {
	name, kind string // kind: integer, text or bytes
	unique     bool
}

// attackCase is one change.
type attackCase struct {
	table, column, kind string // column "" for a row operation (kind names it)
	target              int64
	what                string // what the row is
	stmts               []string
	// probe: what the change did on the prepared database, rolled back ("" when it changed it).
	probe string
}

func (c attackCase) key() string {
	col := c.table
	if c.column != "" {
		col += "." + c.column
	}
	return fmt.Sprintf("%s · %s %d · %s", col, c.order(), c.target, c.kind)
}

func (c attackCase) order() string {
	if c.table == "audit_events" {
		return "seq"
	}
	return "row"
}

// attackOutcome is what followed a change, as the table shows it.
type attackOutcome struct {
	database                                 string // "refused: …", "no change", or "" when changed
	serve, rewrap                            string
	verifyFile, verifyDatabase, verifyLogged string
}

func (o attackOutcome) cells() []string {
	if o.database != "" {
		return []string{o.database, "", "", "", "", ""}
	}
	return []string{"changed", o.serve, o.rewrap, o.verifyFile, o.verifyDatabase, o.verifyLogged}
}

func TestDatabaseAttackerTable(t *testing.T) {
	got := map[string]map[string][]string{} // engine → case → cells
	var mu sync.Mutex
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			fx := newAttackFixture(t, engine)
			cases := fx.cases(t)
			// The tree's rows are many and alike: its first leaf's, a hash above the leaves, and
			// its newest row stand for them (the store's tests change every kind of tree row).
			cases = slices.DeleteFunc(cases, func(c attackCase) bool {
				return c.table == "audit_tree" && c.target != 0 && c.target != 2 && c.target != 18
			})
			if engine == "pgbouncer" {
				// Through the pooler the same code runs: the changes of one row of each kind show
				// it changes no outcome, in less time.
				cases = slices.DeleteFunc(cases, func(c attackCase) bool { return c.table == "audit_events" && c.target != 8 && c.target != 11 })
			}
			outcomes := make([]attackOutcome, len(cases))
			// Cases run a few at a time: each has its own copy and files, and most of its time is
			// the database's.
			work := make(chan int)
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for i := range work {
						t.Run(cases[i].key(), func(t *testing.T) { outcomes[i] = fx.run(t, cases[i]) })
					}
				})
			}
			for i := range cases {
				work <- i
			}
			close(work)
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			got[engine] = map[string][]string{}
			for i, c := range cases {
				got[engine][c.key()] = outcomes[i].cells()
			}
		})
	}
	checkThreatGolden(t, got)
}

// newAttackFixture prepares the trail every case copies, on the engine (PostgreSQL's for the
// pooler, whose cases reach their copies through it):
//
//	seq 1-2   from before the chain (unlinked; the genesis names them)
//	seq 3-4   linked under k0
//	seq 5-7   keys rewrap to k1: its start, the anchor of seq 1-4, its end
//	seq 8-9   linked under k1; the checkpoints file's one checkpoint covers seq 1-9
//	seq 10-11 linked under k1, covered by no checkpoint yet
//
// and k0 then leaves the ring: the ring every case runs with is k1 alone.
func newAttackFixture(t *testing.T, engine string) *attackFixture {
	direct := engine
	if engine == "pgbouncer" {
		testdb.URL(t, engine) // skips when the pooler is not there
		direct = "postgres"
	}
	url := testdb.URL(t, direct)
	testdb.OpenAsIs(t, url)
	for i, outcome := range []string{"granted", "denied"} {
		sqlOn(t, url, fmt.Sprintf(`INSERT INTO audit_events (id, at, actor_user_id, action, target_id, outcome, detail, seq)
			VALUES ('%s', %d, '%s', 'principal.decrypt', '%s', '%s', 'field ssn', %d)`, testdb.FixtureID(9801+i), 1_700_000_000_000_001+i, testStaff, testPrincipal(i+1), outcome, i+1))
	}
	sqlOn(t, url, `UPDATE audit_chain_genesis SET last_unlinked_seq = 2`) // as the migration that made it would
	c := newCLI(t, url, "k0")
	c.importFile(testDataset(0)) // opens it with a ring: seals the genesis
	for range 2 {
		c.mustRun("apikey", "create", "--user", string(testStaff))
	}
	c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k1", "k0")
	c.mustRun("keys", "rewrap")
	c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k1")
	for range 2 {
		c.mustRun("apikey", "create", "--user", string(testStaff))
	}
	file := filepath.Join(t.TempDir(), "checkpoints.jsonl")
	if cp := signCheckpoint(t, c, file); cp.Seq != 9 {
		t.Fatalf("the fixture's checkpoint covers seq 1-%d, want 1-9", cp.Seq)
	}
	for range 2 {
		c.mustRun("apikey", "create", "--user", string(testStaff))
	}
	c.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = file
	wantVerify(t, c, nil, "intact: 11 events (the first 2 from before the chain, unlinked)")
	fx := &attackFixture{engine: engine, url: url, file: file}
	st := testdb.OpenAsIs(t, url)
	events, _ := trailEvents(t, st)
	fx.digests, fx.ids = trailDigests(events), map[domain.ID]bool{}
	for _, e := range events {
		fx.ids[e.ID] = true
	}
	for seq, want := range map[int64]string{1: "", 3: "k0", 6: "k1", 8: "k1", 11: "k1"} {
		if e := events[seq-1]; e.ChainKeyID != want || (seq == 6) != (e.Action == auditlog.ActionAnchor) {
			t.Fatalf("the fixture's seq %d is %+v", seq, e)
		}
	}
	fx.tables = auditCatalog(t, st)
	return fx
}

// trailEvents reads the trail in seq order as far as it reads as events; complete is false when
// a row does not.
func trailEvents(t *testing.T, st *store.Store) (events []domain.AuditEvent, complete bool) {
	t.Helper()
	rows, err := testdb.SQLOf(t, st).QueryContext(context.Background(), `SELECT `+auditlog.Columns+` FROM audit_events ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		e, err := auditlog.ScanEvent(rows)
		if err != nil {
			return events, false // a value of the wrong kind: no digest reaches past it
		}
		events = append(events, e)
	}
	return events, true
}

// trailDigests are the digests of events at each seq, as long as they are numbered 1, 2, ….
func trailDigests(events []domain.AuditEvent) [][]byte {
	var out [][]byte
	var d []byte
	for i, e := range events {
		var err error
		if e.Seq != int64(i+1) {
			break
		}
		if d, err = auditlog.ChainDigest(d, e); err != nil {
			break
		}
		out = append(out, d)
	}
	return out
}

// auditCatalog reads the audit tables and their columns from the database's own catalog.
func auditCatalog(t *testing.T, st *store.Store) []auditTable {
	t.Helper()
	ctx := context.Background()
	db := testdb.SQLOf(t, st)
	var tablesQ, columnsQ, uniqueQ string
	if st.Engine() == "postgres" {
		tablesQ = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name LIKE 'audit%' ORDER BY 1`
		columnsQ = `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`
		uniqueQ = `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
			WHERE i.indrelid = $1::regclass AND i.indisunique AND i.indnatts = 1`
	} else {
		tablesQ = `SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'audit%' ORDER BY 1`
		columnsQ = `SELECT name, type FROM pragma_table_info(?)`
		uniqueQ = `SELECT name FROM pragma_table_info(?1) WHERE pk = 1 AND (SELECT count(*) FROM pragma_table_info(?1) WHERE pk > 0) = 1
			UNION SELECT ii.name FROM pragma_index_list(?1) il, pragma_index_info(il.name) ii WHERE il."unique" = 1
			AND (SELECT count(*) FROM pragma_index_info(il.name)) = 1`
	}
	names := column[string](t, db, tablesQ)
	var tables []auditTable
	for _, name := range names {
		tb := auditTable{name: name}
		unique := column[string](t, db, uniqueQ, name)
		rows, err := db.QueryContext(ctx, columnsQ, name)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var col, typ string
			if err := rows.Scan(&col, &typ); err != nil {
				t.Fatal(err)
			}
			c := auditColumn{name: col, unique: slices.Contains(unique, col)}
			switch typ = strings.ToLower(typ); {
			case strings.Contains(typ, "int"):
				c.kind = "integer"
			case strings.Contains(typ, "char") || strings.Contains(typ, "text"):
				c.kind = "text"
			case strings.Contains(typ, "blob") || strings.Contains(typ, "bytea"):
				c.kind = "bytes"
			default:
				t.Fatalf("%s.%s: a column of type %q: teach the table its kind", name, col, typ)
			}
			if c.kind == "integer" && c.unique && tb.order == "" {
				tb.order = col
			}
			tb.columns = append(tb.columns, c)
		}
		rows.Close()
		if tb.order == "" {
			t.Fatalf("%s has no integer unique column to name its rows by: teach the table how to", name)
		}
		tables = append(tables, tb)
	}
	if len(tables) < 2 {
		t.Fatalf("the catalog lists %v as the audit tables", names)
	}
	return tables
}

// column reads the one column q selects.
func column[T any](t *testing.T, db *sql.DB, q string, args ...any) []T {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// cases are every change of the table, each tried on the prepared database in a transaction
// rolled back (probe): refused by the database, or no change at all, is an outcome of its own.
func (fx *attackFixture) cases(t *testing.T) []attackCase {
	t.Helper()
	st := testdb.OpenAsIs(t, fx.url)
	var cases []attackCase
	for _, tb := range fx.tables {
		targets := column[int64](t, testdb.SQLOf(t, st), `SELECT `+tb.order+` FROM `+tb.name+` ORDER BY 1`)
		what := map[int64]string{}
		if tb.name == "audit_events" {
			targets = nil
			for _, x := range attackTargets {
				targets = append(targets, x.seq)
				what[x.seq] = x.what
			}
		}
		all := column[int64](t, testdb.SQLOf(t, st), `SELECT `+tb.order+` FROM `+tb.name)
		if len(all) == 0 {
			// A table the prepared trail leaves empty (audit_prune: it is not pruned) has no row
			// to change; rows forged into it are TestAuditPruneForgedRecordIsBroken's.
			continue
		}
		last := slices.Max(all)
		for _, target := range targets {
			add := func(column, kind string, stmts ...string) {
				c := attackCase{table: tb.name, column: column, kind: kind, target: target, what: what[target], stmts: stmts}
				if len(all) == 1 && (kind == "copied from another row" || strings.HasPrefix(kind, "swap") || strings.HasPrefix(kind, "reorder")) {
					c.stmts, c.probe = nil, "one row: no other"
				}
				cases = append(cases, c)
			}
			where := fmt.Sprintf(" WHERE %s = %d", tb.order, target)
			next := target + 1
			if next > last {
				next = target - 1
			}
			other := fmt.Sprintf("%s = %d", tb.order, next)
			for _, c := range tb.columns {
				set := "UPDATE " + tb.name + " SET " + c.name + " = "
				add(c.name, "new value", set+newValue(st.Engine(), c)+where)
				add(c.name, "NULL", set+"NULL"+where)
				add(c.name, "unknown key id", set+"'kx'"+where)
				from := fmt.Sprintf("%s = %d", tb.order, nearestOther(t, testdb.SQLOf(t, st), tb, c.name, target))
				add(c.name, "copied from another row", fmt.Sprintf("%s(SELECT %s FROM %s WHERE %s)%s", set, c.name, tb.name, from, where))
			}
			shift := func(from int64, by string) []string { // moves rows from on by ±1, out of the way first
				return []string{
					fmt.Sprintf("UPDATE %s SET %s = %s + 1000000 WHERE %s >= %d", tb.name, tb.order, tb.order, tb.order, from),
					fmt.Sprintf("UPDATE %s SET %s = %s - 1000000 %s WHERE %s >= 1000000", tb.name, tb.order, tb.order, by, tb.order),
				}
			}
			add("", "delete", "DELETE FROM "+tb.name+where)
			add("", "insert (a copy, at the end)", copyRow(tb, target, fmt.Sprint(last+1)))
			add("", "insert (a copy, before it)", append(shift(target, "+ 1"), copyRow(tb, target+1, fmt.Sprint(target)))...)
			add("", "renumber (removed, the gap closed)", append([]string{"DELETE FROM " + tb.name + where}, shift(target+1, "- 1")...)...)
			add("", "reorder (moved to the end)", append([]string{fmt.Sprintf("UPDATE %s SET %s = %d%s", tb.name, tb.order, last+1, where)}, shift(target+1, "- 1")...)...)
			add("", "swap (with the next row)",
				fmt.Sprintf("UPDATE %s SET %s = -1%s", tb.name, tb.order, where),
				fmt.Sprintf("UPDATE %s SET %s = %d WHERE %s", tb.name, tb.order, target, other),
				fmt.Sprintf("UPDATE %s SET %s = %d WHERE %s = -1", tb.name, tb.order, next, tb.order))
		}
	}
	for i := range cases {
		if cases[i].stmts != nil {
			cases[i].probe = probe(t, st, fx.tables, cases[i].stmts)
		}
	}
	return cases
}

// nearestOther is the row nearest target (by tb.order) whose column holds another value than
// target's: the value a copy from another row brings. target itself when every row holds the same.
func nearestOther(t *testing.T, db *sql.DB, tb auditTable, column string, target int64) int64 {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT `+tb.order+`, `+column+` FROM `+tb.name)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	values := map[int64]string{}
	for rows.Next() {
		var n int64
		var v any
		if err := rows.Scan(&n, &v); err != nil {
			t.Fatal(err)
		}
		values[n] = fmt.Sprintf("%#v", v)
	}
	best := target
	for n, v := range values {
		if d := max(n-target, target-n); v != values[target] && (best == target || d < max(best-target, target-best) || (d == max(best-target, target-best) && n > best)) {
			best = n
		}
	}
	return best
}

// newValue is an expression for another value of c's kind (also where it is NULL).
func newValue(engine string, c auditColumn) string {
	switch {
	case c.kind == "integer" && c.unique:
		return c.name + " + 1000"
	case c.kind == "integer":
		return "COALESCE(" + c.name + ", 0) + 1"
	case c.kind == "text":
		return "COALESCE(" + c.name + ", '') || 'x'"
	case engine == "postgres":
		return `'\x` + strings.Repeat("ab", 32) + `'::bytea`
	}
	return `X'` + strings.Repeat("ab", 32) + `'`
}

// copyRow is an INSERT of a copy of row from into tb, numbered at, its other unique values made
// new.
func copyRow(tb auditTable, from int64, at string) string {
	var cols, exprs []string
	for _, c := range tb.columns {
		cols = append(cols, c.name)
		switch {
		case c.name == tb.order:
			exprs = append(exprs, at)
		case c.unique && c.kind == "text":
			exprs = append(exprs, c.name+" || 'x'")
		case c.unique:
			exprs = append(exprs, c.name+" + 1000")
		default:
			exprs = append(exprs, c.name)
		}
	}
	return fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s WHERE %s = %d", tb.name, strings.Join(cols, ", "), strings.Join(exprs, ", "), tb.name, tb.order, from)
}

// probe runs stmts in a transaction on st's database and rolls it back: "refused by the database"
// when a statement fails, "no change" when every audit table holds what it held, "" otherwise.
func probe(t *testing.T, st *store.Store, tables []auditTable, stmts []string) string {
	t.Helper()
	ctx := context.Background()
	tx, err := testdb.SQLOf(t, st).BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	before := fingerprint(t, tx, tables)
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return "refused by the database"
		}
	}
	if fingerprint(t, tx, tables) == before {
		return "no change"
	}
	return ""
}

// fingerprint is every row of the audit tables, as text.
func fingerprint(t *testing.T, tx *sql.Tx, tables []auditTable) string {
	t.Helper()
	var all []string
	for _, tb := range tables {
		rows, err := tx.QueryContext(context.Background(), `SELECT * FROM `+tb.name)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			v := make([]any, len(cols))
			p := make([]any, len(cols))
			for i := range v {
				p[i] = &v[i]
			}
			if err := rows.Scan(p...); err != nil {
				t.Fatal(err)
			}
			all = append(all, fmt.Sprintf("%s %#v", tb.name, v))
		}
		rows.Close()
	}
	sort.Strings(all)
	return strings.Join(all, "\n")
}

// run makes the change c on a copy of the prepared database under two running serves' checkpoint
// signers, then writes an event, lets each sign its next checkpoint, runs keys rewrap and audit
// verify, and checks that nothing exits 0 and nothing signed or anchored covers the change, but
// where the table argues it.
func (fx *attackFixture) run(t *testing.T, c attackCase) attackOutcome {
	if c.probe != "" {
		return attackOutcome{database: c.probe}
	}
	ctx := context.Background()
	url := testdb.Copy(t, fx.engine, fx.url)
	file := filepath.Join(t.TempDir(), "checkpoints.jsonl")
	if err := os.WriteFile(file, []byte(readFile(t, fx.file)), 0o600); err != nil {
		t.Fatal(err)
	}
	st := testdb.OpenAsIs(t, url)
	ring := testdb.Ring(t, "k1")
	var fileLogs, logged lockedBuffer
	withFile, err := newCheckpointer(file, st, ring, newLogger(&fileLogs, 0))
	if err != nil {
		t.Fatal(err)
	}
	logOnly, err := newCheckpointer("", st, ring, newLogger(&logged, 0))
	if err != nil {
		t.Fatal(err)
	}
	withFile.tick(ctx)
	logOnly.tick(ctx)
	if withFile.signed != 11 || logOnly.signed != 11 {
		t.Fatalf("the serves did not sign the prepared trail: %d, %d\n%s%s", withFile.signed, logOnly.signed, fileLogs.String(), logged.String())
	}
	fileBefore, logBefore := len(fileCheckpoints(t, file)), len(loggedCheckpoints(t, logged.String()))

	sqlOn(t, url, c.stmts...)
	cli := newCLI(t, url, "k1")
	cli.run("apikey", "create", "--user", string(testStaff)) // something new to sign, if it can be written
	withFile.tick(ctx)
	logOnly.tick(ctx)
	withCheckpoints := newCLI(t, url, "k1")
	withCheckpoints.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = file
	_, _, rewrapFile := withCheckpoints.run("keys", "rewrap")
	_, _, rewrapLog := cli.run("keys", "rewrap")
	logFile := filepath.Join(t.TempDir(), "logged.jsonl")
	writeLoggedCheckpoints(t, logFile, logged.String())
	o := attackOutcome{
		verifyFile:     verifyCell(t, withCheckpoints),
		verifyDatabase: verifyCell(t, cli),
		verifyLogged:   verifyCell(t, cli, "--checkpoints", logFile),
		rewrap:         joinCells("with the file: ", exitCell(rewrapFile), "without: ", exitCell(rewrapLog)),
	}

	// What was signed and anchored after the change, and whether it covers it: its digest is the
	// trail's as it is now, at a seq at or after the first the change touched.
	events, complete := trailEvents(t, st)
	now := trailDigests(events)
	first := int64(min(len(now), len(fx.digests)) + 1)
	for i := range min(len(now), len(fx.digests)) {
		if !slices.Equal(now[i], fx.digests[i]) {
			first = int64(i + 1)
			break
		}
	}
	if c.table != "audit_events" {
		first = 1 // a change outside the events: anything signed after it covers it
	}
	covers := func(seq int64, digest string) bool {
		return seq >= first && seq <= int64(len(now)) && hex.EncodeToString(now[seq-1]) == digest
	}
	var signed, covering []string
	for _, cp := range append(fileCheckpoints(t, file)[fileBefore:], loggedCheckpoints(t, logged.String())[logBefore:]...) {
		signed = append(signed, fmt.Sprint(cp.Seq))
		if covers(cp.Seq, cp.Digest) {
			covering = append(covering, fmt.Sprintf("the checkpoint of seq %d", cp.Seq))
		}
	}
	anchored := anchorRe.FindAllStringSubmatch(anchorDetails(events, 11), -1)
	for _, m := range anchored {
		var seq int64
		fmt.Sscan(m[1], &seq)
		if covers(seq, m[2]) {
			covering = append(covering, fmt.Sprintf("the anchor of seq 1-%d", seq))
		}
	}
	switch {
	case len(signed) == 0:
		o.serve = "not signed"
	case len(covering) == 0:
		o.serve = "signed seq " + strings.Join(slices.Compact(signed), ", ") + ": not covering it"
	default:
		o.serve = "signed seq " + strings.Join(slices.Compact(signed), ", ")
	}

	// The rules, and the arguments for what breaks them.
	cut := complete && len(now) == len(events) && cutTail(fx, events, first)
	// The tree is derived from the events, which the checkpoints' digests cover: a changed tree
	// row is the walk's break (audit verify), not a digest's, until checkpoints sign the tree's
	// root; a row removed from its end is made again from the events at the next opening with
	// the ring (Store.BuildAuditTree), which leaves the trail as it was.
	tree := c.table == "audit_tree"
	argued := c.table == "audit_chain_lock" || tree || cut
	if !argued {
		if len(covering) > 0 {
			t.Errorf("%s covers the change", strings.Join(covering, " and "))
		}
		for name, err := range map[string]error{"keys rewrap with the file": rewrapFile, "keys rewrap without": rewrapLog} {
			if err == nil {
				t.Errorf("%s ran: it must refuse", name)
			}
		}
	}
	for name, cell := range map[string]string{"verify with the file": o.verifyFile, "verify with the database alone": o.verifyDatabase, "verify with the logged checkpoints": o.verifyLogged} {
		if strings.HasPrefix(cell, "0") && !(c.table == "audit_chain_lock" || (tree && c.column == "") || (cut && name == "verify with the database alone")) {
			t.Errorf("%s: %s after the change", name, cell)
		}
	}
	if cut {
		o.verifyDatabase += " (a cut tail: see below)"
	}
	return o
}

var anchorRe = regexp.MustCompile(`events 1 to (\d+): digest ([0-9a-f]{64})`)

// anchorDetails are the details of the anchors after seq after.
func anchorDetails(events []domain.AuditEvent, after int64) string {
	var b strings.Builder
	for _, e := range events {
		if e.Seq > after && e.Action == auditlog.ActionAnchor {
			b.WriteString(e.Detail + "\n")
		}
	}
	return b.String()
}

// cutTail tells whether the trail, from first on, holds only events written after the change: the
// prepared trail cut off there and continued, a shorter trail that is whole, which the database
// alone cannot tell from one never longer.
func cutTail(fx *attackFixture, events []domain.AuditEvent, first int64) bool {
	if first > int64(len(fx.digests)) {
		return false
	}
	for _, e := range events[first-1:] {
		if fx.ids[e.ID] {
			return false
		}
	}
	return true
}

// fileCheckpoints are the checkpoints in file.
func fileCheckpoints(t *testing.T, file string) []checkpoint.Checkpoint {
	t.Helper()
	read, err := checkpoint.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []checkpoint.Checkpoint
	for _, e := range read.Entries {
		out = append(out, e.Checkpoint)
	}
	return out
}

// loggedCheckpoints are the checkpoints in serve's log, as the auditor's procedure makes a file
// of them (jq -r '.note + "\n"'), read back.
func loggedCheckpoints(t *testing.T, log string) []checkpoint.Checkpoint {
	t.Helper()
	file := filepath.Join(t.TempDir(), "logged")
	writeLoggedCheckpoints(t, file, log)
	return fileCheckpoints(t, file)
}

// writeLoggedCheckpoints writes the checkpoints in serve's log to file, as the auditor's
// procedure does: each line's note, and a blank line.
func writeLoggedCheckpoints(t *testing.T, file, log string) {
	t.Helper()
	var b strings.Builder
	lines := bufio.NewScanner(strings.NewReader(log))
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var l struct {
			Msg  string `json:"msg"`
			Note string `json:"note"`
		}
		if err := json.Unmarshal(lines.Bytes(), &l); err != nil {
			t.Fatalf("log line %q: %v", lines.Text(), err)
		}
		if l.Msg == "audit checkpoint" {
			b.WriteString(l.Note + "\n")
		}
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// verifyCell runs audit verify and tells its outcome in a few words: the exit status, where, and
// what kind of break.
func verifyCell(t *testing.T, c *cli, args ...string) string {
	t.Helper()
	out, _, err := c.run(append([]string{"audit", "verify"}, args...)...)
	first, _, _ := strings.Cut(out, "\n")
	code := Report(&strings.Builder{}, err)
	documentedAnswer(t, code, out)
	switch {
	case code == 0 && strings.HasPrefix(first, "intact"):
		return "0 intact"
	case code == 1 && strings.HasPrefix(first, "BROKEN: "):
		return fmt.Sprintf("1 %s: %s", breakWhere(first), breakKind(t, first))
	case code == 3 && strings.HasPrefix(first, "CANNOT CHECK: "):
		return "3 cannot check: " + breakKind(t, first)
	}
	t.Fatalf("audit verify %s: exit %d: %v\n%s", strings.Join(args, " "), code, err, out)
	return ""
}

var whereRe = regexp.MustCompile(`^BROKEN: audit chain broken (at|in) seq ([0-9-]+)`)

func breakWhere(line string) string {
	m := whereRe.FindStringSubmatch(line)
	if m == nil {
		return "?"
	}
	return "seq " + m[2]
}

// breakKinds name a verify's first line by what it says, first match wins. A line none matches
// fails the test: name it here.
var breakKinds = []struct{ says, kind string }{
	{"relabelled", "relabelled key id"},
	{"key ids were written by hand", "relabelled key id"},
	{"the genesis record (where the chain begins) is missing", "genesis removed"},
	{"does not match its seal", "genesis seal"},
	{"but has no seal", "genesis seal removed"},
	{"has a seal but names no key", "genesis key id removed"},
	{"genesis record is unreadable", "genesis unreadable"},
	{"genesis says", "genesis"},
	{"its link does not match", "link"},
	{"not in the audit tree", "tree row removed"},
	{"is missing: the tree row was removed", "tree row removed"},
	{"audit tree holds leaves past the trail's end", "cut tail (tree)"},
	{"in the audit tree", "tree"},
	{"of the audit tree it added", "tree"},
	{"no link", "link removed"},
	{"link is malformed", "malformed link"},
	{"does not hold an event", "unreadable row"},
	{"missing: removed", "gap"},
	{"numbered out of order", "order"},
	{"no sequence number", "no seq"},
	{"differs from what the checkpoint", "checkpoint's digest"},
	{"differs from what the anchor", "anchor's digest"},
	{"tail was cut off", "cut tail"},
	{"after links under keys it holds", "key the ring lacks, after keys it holds"},
	{"which the ring does not hold", "key the ring lacks"},
	{"an anchor", "anchor"},
}

func breakKind(t *testing.T, line string) string {
	for _, k := range breakKinds {
		if strings.Contains(line, k.says) {
			return k.kind
		}
	}
	t.Errorf("no kind of break says %q: add one to breakKinds", line)
	return "?"
}

func exitCell(err error) string {
	if err == nil {
		return "ran (0)"
	}
	return fmt.Sprintf("refused (%d)", Report(&strings.Builder{}, err))
}

// joinCells is "a" when both halves say the same, else both with their labels.
func joinCells(la, a, lb, b string) string {
	if a == b {
		return a
	}
	return la + a + "; " + lb + b
}
