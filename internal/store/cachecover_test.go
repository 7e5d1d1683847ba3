package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// The read cache's rule: every column a cached read reads is watched by a trigger that moves the
// cache generation, in the same transaction, on every INSERT and DELETE of its table and on
// every UPDATE of the column (and TRUNCATE, on PostgreSQL), whoever writes. A new cached read, a
// new statement of one, a new column read by one, or a new table, fails
// TestTriggersCoverWhatCachedReadsRead until a migration gives it its trigger. The statements are
// each read's list (cachedRead.queries), and a read's load runs no other: it reads through a
// cachedReader, which refuses a statement the read does not list
// (TestCachedReadsRunOnlyTheirListedStatements). The test asks
// each engine: the columns a statement reads come from the engine's own analysis of it (SQLite:
// the program EXPLAIN compiles it to; PostgreSQL: the columns a view made of it depends on), the
// triggers from the engine's catalog (SQLite: the trigger programs EXPLAIN compiles into each
// kind of write; PostgreSQL: pg_trigger).

// unwatched are the columns a cached read reads whose changes deliberately move no generation,
// with the reason.
var unwatched = map[string]string{
	// NoteAPIKeyUse stamps it as keys are used: a cached credential keeps the last use it was
	// read with, and the store remembers what it stamped (TestLastUseIsStampedOncePerInterval).
	"api_keys.last_used_at": "a key's last use",
}

func TestTriggersCoverWhatCachedReadsRead(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			db := schemaOnly(t, engine)
			ctx := context.Background()
			watched, err := watchedColumns(ctx, engine, db)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			reads := store.CachedReadQueries()
			for i, queries := range reads {
				if len(queries) == 0 {
					t.Errorf("cached read %d lists no statement", i)
				}
				for _, q := range queries {
					read, err := columnsRead(ctx, engine, db, q)
					if err != nil {
						t.Fatalf("cached read %d: %v\n%s", i, err, q)
					}
					if len(read) == 0 {
						t.Errorf("cached read %d: the engine names no column read by\n%s", i, q)
					}
					for _, c := range read {
						seen[c] = true
						if _, ok := unwatched[c]; !ok && !watched.covers(c) {
							t.Errorf("cached read %d reads %s, which %s; a migration must give it its trigger\n%s", i, c, watched.missing(c), q)
						}
					}
				}
			}
			for c := range unwatched {
				if !seen[c] {
					t.Errorf("%s is listed as read but unwatched, and no cached read reads it", c)
				}
			}
		})
	}
}

// The check above is only as good as its two halves: the columns it finds read, whatever
// clause reads them, and the coverage it finds. Each statement here reads the column named
// beside it in one way; the check must find it read, and report it uncovered exactly when it
// is: a column no UPDATE OF lists, a column added after the triggers, the columns of a table
// whose DELETE trigger was dropped, and those of one whose UPDATE trigger fires only WHEN.
func TestTheCoverageCheckFindsEveryColumnRead(t *testing.T) {
	damage := map[string][]string{
		"sqlite": {
			`ALTER TABLE leads ADD COLUMN sa_new_field TEXT`,
			`DROP TRIGGER sessions_cache_delete`,
			`DROP TRIGGER lead_card_plans_cache_update`,
			`CREATE TRIGGER lead_card_plans_cache_update AFTER UPDATE ON lead_card_plans WHEN NEW.lead_id = 'x' BEGIN UPDATE cache_generation SET n = random(); END`,
		},
		"postgres": {
			`ALTER TABLE leads ADD COLUMN sa_new_field TEXT`,
			`DROP TRIGGER sessions_cache ON sessions`,
			`CREATE TRIGGER sessions_cache AFTER INSERT OR TRUNCATE OR UPDATE ON sessions FOR EACH STATEMENT EXECUTE FUNCTION cache_generation_bump()`,
			`DROP TRIGGER lead_card_plans_cache ON lead_card_plans`,
			`CREATE TRIGGER lead_card_plans_cache AFTER INSERT OR DELETE OR TRUNCATE ON lead_card_plans FOR EACH STATEMENT EXECUTE FUNCTION cache_generation_bump()`,
			`CREATE TRIGGER lead_card_plans_cache_update AFTER UPDATE ON lead_card_plans FOR EACH STATEMENT WHEN (pg_backend_pid() = 0) EXECUTE FUNCTION cache_generation_bump()`,
		},
	}
	cases := []struct {
		what, query, column string
		covered             bool
	}{
		{"a result column", `SELECT display_name FROM card_plans WHERE id = ?`, "card_plans.display_name", true},
		{"a WHERE through a unique index only", `SELECT id FROM api_keys WHERE key_hash = ?`, "api_keys.key_hash", true},
		{"a JOIN's ON", `SELECT l.id FROM leads l JOIN merchants m ON m.partner_id = l.partner_id`, "merchants.partner_id", true},
		{"an ORDER BY", `SELECT id FROM card_plans ORDER BY sort_order`, "card_plans.sort_order", true},
		{"an EXISTS", `SELECT 1 WHERE EXISTS (SELECT 1 FROM principals WHERE ssn_key_id = ?)`, "principals.ssn_key_id", true},
		{"a CTE", `WITH t AS (SELECT below FROM sam_log_buckets WHERE entity_id = ?) SELECT count(*) FROM t WHERE below > 0`, "sam_log_buckets.below", true},
		{"a column of a table without rowid", `SELECT sam_id FROM sam_action_logs WHERE entity_id = ?`, "sam_action_logs.sam_id", true},
		{"SELECT *", `SELECT * FROM users WHERE id = ?`, "users.email", false},
		{"a new column", `SELECT sa_new_field FROM leads WHERE id = ?`, "leads.sa_new_field", false},
		{"a table without its DELETE trigger", `SELECT token_hash FROM sessions WHERE id = ?`, "sessions.token_hash", false},
		{"a table whose UPDATE trigger has a WHEN", `SELECT card_plan_id FROM lead_card_plans WHERE lead_id = ?`, "lead_card_plans.card_plan_id", false},
		{"the unwatched last use", `SELECT last_used_at FROM api_keys WHERE id = ?`, "api_keys.last_used_at", false},
	}
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			db := schemaOnly(t, engine)
			ctx := context.Background()
			for _, stmt := range damage[engine] {
				if _, err := db.ExecContext(ctx, stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			watched, err := watchedColumns(ctx, engine, db)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cases {
				read, err := columnsRead(ctx, engine, db, c.query)
				if err != nil {
					t.Fatalf("%s: %v", c.what, err)
				}
				if !slices.Contains(read, c.column) {
					t.Errorf("%s: found %v read, not %s", c.what, read, c.column)
				}
				if got := watched.covers(c.column); got != c.covered {
					t.Errorf("%s: %s covered %v, want %v", c.what, c.column, got, c.covered)
				}
			}
		})
	}
}

// schemaOnly is a plain connection (as the sqlite3 shell or psql would open) to a fresh,
// migrated database of the engine.
func schemaOnly(t *testing.T, engine string) *sql.DB {
	t.Helper()
	url := testdb.URL(t, engine)
	testdb.OpenURL(t, url)
	driver, dsn := "pgx", url
	if engine == "sqlite" {
		// The store opened above may still be at its start-up work on the file (a WAL checkpoint):
		// wait for its lock as every other connection does.
		driver, dsn = "sqlite", "file:"+strings.TrimPrefix(url, "sqlite:")+"?_pragma=busy_timeout(10000)"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	return db
}

// columnsRead are the columns, as table.column, that the engine says query reads.
func columnsRead(ctx context.Context, engine string, db *sql.DB, query string) ([]string, error) {
	if engine == "sqlite" {
		return sqliteColumnsRead(ctx, db, query)
	}
	return postgresColumnsRead(ctx, db, query)
}

// postgresColumnsRead makes a view of query (its parameters NULL) in a transaction it rolls
// back, and lists the columns PostgreSQL records the view as depending on: every column the
// query names anywhere, and every column of a table it reads with *.
func postgresColumnsRead(ctx context.Context, db *sql.DB, query string) ([]string, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	// The query is a subquery, so that result columns of the same name (two ids) are allowed.
	if _, err := tx.ExecContext(ctx, `CREATE VIEW cached_read_probe AS SELECT 1 AS one FROM (`+strings.ReplaceAll(query, "?", "NULL")+`) AS q`); err != nil {
		return nil, err
	}
	return strings1(tx.QueryContext(ctx, `SELECT table_name || '.' || column_name FROM information_schema.view_column_usage
WHERE view_name = 'cached_read_probe' AND view_schema = current_schema() ORDER BY 1`))
}

// sqliteColumnsRead compiles query with EXPLAIN and follows its program: each cursor opened on a
// table or an index of the schema (OpenRead, by root page), each column a Column instruction
// reads through one, and every key column of an index or a table without rowid it opened (a
// seek compares those without reading them into a register).
func sqliteColumnsRead(ctx context.Context, db *sql.DB, query string) ([]string, error) {
	s, err := readSQLiteSchema(ctx, db)
	if err != nil {
		return nil, err
	}
	prog, err := explain(ctx, db, query)
	if err != nil {
		return nil, err
	}
	read := map[string]bool{}
	cursors := map[int64]*sqliteObject{}
	for _, op := range prog {
		if op.addr == 0 && len(cursors) > 0 {
			break // a subprogram (a trigger's) follows: a read runs none
		}
		switch op.opcode {
		case "OpenRead", "ReopenIdx":
			o := s.byRoot[op.p2]
			if o == nil || op.p3 != 0 {
				return nil, fmt.Errorf("cursor %d on root page %d of database %d: not a table or index of the schema", op.p1, op.p2, op.p3)
			}
			if o.partial {
				return nil, fmt.Errorf("index %s is partial: the columns of its WHERE are not derived", o.name)
			}
			cursors[op.p1] = o
			for _, c := range o.keys {
				read[o.table+"."+c] = true
			}
		case "Column":
			o := cursors[op.p1]
			if o == nil {
				continue // a sorter, a pseudo-table or an ephemeral table: filled from columns read above
			}
			if op.p2 >= int64(len(o.columns)) || o.columns[op.p2] == "" {
				return nil, fmt.Errorf("column %d of %s: not a column the schema names", op.p2, o.name)
			}
			read[o.table+"."+o.columns[op.p2]] = true
		}
	}
	return slices.Sorted(maps.Keys(read)), nil
}

// sqliteObject is a table or an index as a cursor of a program reads it.
type sqliteObject struct {
	name, table string
	// columns are the table's columns in the order the program numbers them: the table's own
	// (a rowid table), the primary key's first (without rowid), the index's (an index).
	columns []string
	// keys are the columns that order it (an index's, a table without rowid's primary key).
	keys    []string
	partial bool
}

// sqliteSchema is what a program's instructions refer to by number.
type sqliteSchema struct {
	byRoot         map[int64]*sqliteObject // tables and indexes by root page
	generationRoot int64                   // cache_generation's
	triggers       map[string]string       // name to SQL
	columnsOfTable map[string][]string
}

func readSQLiteSchema(ctx context.Context, db *sql.DB) (*sqliteSchema, error) {
	s := &sqliteSchema{byRoot: map[int64]*sqliteObject{}, triggers: map[string]string{}, columnsOfTable: map[string][]string{}}
	type entry struct {
		kind, name, table string
		root              int64
		sql               sql.NullString
	}
	rows, err := db.QueryContext(ctx, `SELECT type, name, tbl_name, rootpage, sql FROM sqlite_schema`)
	if err != nil {
		return nil, err
	}
	var entries []entry
	for rows.Next() {
		var e entry
		var root sql.NullInt64
		if err := rows.Scan(&e.kind, &e.name, &e.table, &root, &e.sql); err != nil {
			rows.Close()
			return nil, err
		}
		e.root = root.Int64
		entries = append(entries, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, e := range entries {
		switch e.kind {
		case "trigger":
			s.triggers[e.name] = e.sql.String
		case "table":
			cols, err := strings1(db.QueryContext(ctx, `SELECT name FROM pragma_table_xinfo(?) ORDER BY cid`, e.name))
			if err != nil {
				return nil, err
			}
			var hidden int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_xinfo(?) WHERE hidden != 0`, e.name).Scan(&hidden); err != nil {
				return nil, err
			}
			if hidden > 0 {
				return nil, fmt.Errorf("table %s has generated columns: how a program numbers its columns is not derived", e.name)
			}
			s.columnsOfTable[e.name] = cols
			if e.name == "cache_generation" {
				s.generationRoot = e.root
			}
			var withoutRowid bool
			if err := db.QueryRowContext(ctx, `SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?`, e.name).Scan(&withoutRowid); err != nil {
				return nil, err
			}
			o := &sqliteObject{name: e.name, table: e.name, columns: cols}
			if withoutRowid {
				var pk string
				if err := db.QueryRowContext(ctx, `SELECT name FROM pragma_index_list(?) WHERE origin = 'pk'`, e.name).Scan(&pk); err != nil {
					return nil, err
				}
				if o.columns, o.keys, err = indexColumns(ctx, db, pk, nil); err != nil {
					return nil, err
				}
			} else if ipk, err := integerPrimaryKey(ctx, db, e.name); err != nil {
				return nil, err
			} else if ipk != "" {
				o.keys = []string{ipk} // the rowid: how the table is ordered and sought
			}
			if e.root > 0 {
				s.byRoot[e.root] = o
			}
		}
	}
	for _, e := range entries {
		if e.kind != "index" || e.root == 0 {
			continue
		}
		o := &sqliteObject{name: e.name, table: e.table}
		if o.columns, o.keys, err = indexColumns(ctx, db, e.name, s.columnsOfTable[e.table]); err != nil {
			return nil, err
		}
		if err := db.QueryRowContext(ctx, `SELECT partial FROM pragma_index_list(?) WHERE name = ?`, e.table, e.name).Scan(&o.partial); err != nil {
			return nil, err
		}
		s.byRoot[e.root] = o
	}
	return s, nil
}

// indexColumns are an index's columns in its order, with which of them are its keys. A rowid
// (cid -1) is named by the table's INTEGER PRIMARY KEY when it has one; an expression fails.
func indexColumns(ctx context.Context, db *sql.DB, index string, tableColumns []string) (columns, keys []string, err error) {
	rows, err := db.QueryContext(ctx, `SELECT cid, name, key FROM pragma_index_xinfo(?) ORDER BY seqno`, index)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var cid int64
		var name sql.NullString
		var key bool
		if err := rows.Scan(&cid, &name, &key); err != nil {
			return nil, nil, err
		}
		if cid == -2 {
			return nil, nil, fmt.Errorf("index %s has an expression: the columns it reads are not derived", index)
		}
		columns = append(columns, name.String) // "" for a rowid without a name
		if key && name.String != "" {
			keys = append(keys, name.String)
		}
	}
	return columns, keys, rows.Err()
}

// integerPrimaryKey is the column that names a rowid table's rowid, "" when none does.
func integerPrimaryKey(ctx context.Context, db *sql.DB, table string) (string, error) {
	rows, err := db.QueryContext(ctx, `SELECT name, upper(type) FROM pragma_table_info(?) WHERE pk > 0`, table)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var names, types []string
	for rows.Next() {
		var n, ty string
		if err := rows.Scan(&n, &ty); err != nil {
			return "", err
		}
		names, types = append(names, n), append(types, ty)
	}
	if len(names) == 1 && types[0] == "INTEGER" {
		return names[0], rows.Err()
	}
	return "", rows.Err()
}

// instruction is a row of EXPLAIN's listing.
type instruction struct {
	addr       int64
	opcode     string
	p1, p2, p3 int64
	p4         string
}

func explain(ctx context.Context, db *sql.DB, query string) ([]instruction, error) {
	rows, err := db.QueryContext(ctx, "EXPLAIN "+query, make([]any, strings.Count(query, "?"))...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var prog []instruction
	for rows.Next() {
		var op instruction
		var p4, p5, comment any
		if err := rows.Scan(&op.addr, &op.opcode, &op.p1, &op.p2, &op.p3, &p4, &p5, &comment); err != nil {
			return nil, err
		}
		if p4 != nil {
			op.p4 = fmt.Sprint(p4)
		}
		prog = append(prog, op)
	}
	return prog, rows.Err()
}

// watch is, per table, which writes move the generation.
type watch map[string]*tableWatch

type tableWatch struct {
	insert, delete, truncate, allUpdates bool
	updates                              map[string]bool
	needsTruncate                        bool // PostgreSQL: TRUNCATE is a write of its own
}

// covers tells whether every write that can change column c (table.column) moves the generation.
func (w watch) covers(c string) bool { return w.missing(c) == "" }

// missing says which writes of c move no generation, "" when none.
func (w watch) missing(c string) string {
	table, column, _ := strings.Cut(c, ".")
	tw := w[table]
	if tw == nil {
		return "no trigger of its table moves"
	}
	var gaps []string
	if !tw.insert {
		gaps = append(gaps, "an INSERT")
	}
	if !tw.delete {
		gaps = append(gaps, "a DELETE")
	}
	if tw.needsTruncate && !tw.truncate {
		gaps = append(gaps, "a TRUNCATE")
	}
	if !tw.allUpdates && !tw.updates[column] {
		gaps = append(gaps, "an UPDATE of it")
	}
	if len(gaps) == 0 {
		return ""
	}
	return strings.Join(gaps, ", ") + " moves no generation"
}

func watchedColumns(ctx context.Context, engine string, db *sql.DB) (watch, error) {
	if engine == "sqlite" {
		return sqliteWatch(ctx, db)
	}
	return postgresWatch(ctx, db)
}

// conditional tells a trigger with a WHEN before its body: one that fires only sometimes.
func conditional(trigger string) bool {
	head := trigger
	if i := regexp.MustCompile(`(?i)\bBEGIN\b`).FindStringIndex(trigger); i != nil {
		head = trigger[:i[0]]
	}
	return regexp.MustCompile(`(?i)\bWHEN\b`).MatchString(head)
}

// sqliteWatch compiles, for each table, an INSERT, a DELETE and an UPDATE of each column with
// EXPLAIN, and looks in each program's triggers for a write to cache_generation. A trigger with
// a WHEN, which may not fire, covers nothing.
func sqliteWatch(ctx context.Context, db *sql.DB) (watch, error) {
	s, err := readSQLiteSchema(ctx, db)
	if err != nil {
		return nil, err
	}
	if s.generationRoot == 0 {
		return nil, fmt.Errorf("no cache_generation table")
	}
	moves := func(stmt string) (bool, error) {
		prog, err := explain(ctx, db, stmt)
		if err != nil {
			return false, err
		}
		trigger := ""
		for _, op := range prog {
			if op.opcode == "Init" && strings.HasPrefix(op.p4, "-- TRIGGER ") {
				trigger = strings.TrimPrefix(op.p4, "-- TRIGGER ")
				if conditional(s.triggers[trigger]) {
					trigger = "" // conditional: its writes count for nothing
				}
			}
			if trigger != "" && op.opcode == "OpenWrite" && op.p2 == s.generationRoot && op.p3 == 0 {
				return true, nil
			}
		}
		return false, nil
	}
	w := watch{}
	for table, columns := range s.columnsOfTable {
		if strings.HasPrefix(table, "sqlite_") {
			continue
		}
		tw := &tableWatch{updates: map[string]bool{}}
		if tw.insert, err = moves(`INSERT INTO "` + table + `" DEFAULT VALUES`); err != nil {
			return nil, err
		}
		if tw.delete, err = moves(`DELETE FROM "` + table + `"`); err != nil {
			return nil, err
		}
		tw.allUpdates = true
		for _, c := range columns {
			if tw.updates[c], err = moves(`UPDATE "` + table + `" SET "` + c + `" = "` + c + `"`); err != nil {
				return nil, err
			}
			tw.allUpdates = tw.allUpdates && tw.updates[c]
		}
		w[table] = tw
	}
	return w, nil
}

// postgresWatch reads the triggers from pg_trigger: those that call cache_generation_bump, are
// enabled, have no WHEN, and fire after or before the writes their type says, with the columns
// of their UPDATE OF (none: every column).
func postgresWatch(ctx context.Context, db *sql.DB) (watch, error) {
	rows, err := db.QueryContext(ctx, `
SELECT c.relname, t.tgtype,
       COALESCE((SELECT string_agg(a.attname, ',') FROM pg_attribute a WHERE a.attrelid = t.tgrelid AND a.attnum = ANY (t.tgattr)), '')
FROM pg_trigger t
JOIN pg_class c ON c.oid = t.tgrelid
JOIN pg_proc p ON p.oid = t.tgfoid
WHERE NOT t.tgisinternal AND pg_table_is_visible(c.oid)
  AND p.proname = 'cache_generation_bump' AND t.tgenabled IN ('O', 'A') AND t.tgqual IS NULL`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	// pg_trigger.tgtype's bits (PostgreSQL's trigger.h).
	const (
		typeInsert   = 1 << 2
		typeDelete   = 1 << 3
		typeUpdate   = 1 << 4
		typeTruncate = 1 << 5
		typeInstead  = 1 << 6
	)
	w := watch{}
	for rows.Next() {
		var table, columns string
		var kind int64
		if err := rows.Scan(&table, &kind, &columns); err != nil {
			return nil, err
		}
		if kind&typeInstead != 0 {
			continue
		}
		tw := w[table]
		if tw == nil {
			tw = &tableWatch{updates: map[string]bool{}, needsTruncate: true}
			w[table] = tw
		}
		tw.insert = tw.insert || kind&typeInsert != 0
		tw.delete = tw.delete || kind&typeDelete != 0
		tw.truncate = tw.truncate || kind&typeTruncate != 0
		if kind&typeUpdate != 0 {
			if columns == "" {
				tw.allUpdates = true
			}
			for c := range strings.SplitSeq(columns, ",") {
				tw.updates[c] = true
			}
		}
	}
	return w, rows.Err()
}

// strings1 reads a one-column result of strings.
func strings1(rows *sql.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
