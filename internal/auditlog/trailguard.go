package auditlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"backoffice/internal/sqltx"
)

// The trail's catalog, checked in the transaction of every append. CheckTrailCatalog runs at
// start and before each checkpoint; between two checks, something made in the database that
// fools the read-back as well as the write would have decrypts served without their events: a
// view renamed into audit_events' place whose INSTEAD OF trigger keeps decrypts where only the
// writing transaction sees them, or (PostgreSQL) the writer's function (audit_chain_append_tree) replaced by one that
// writes nothing and answers as if it had. So each append checks, in its own transaction, what
// its read-back cannot see; a difference holds the trail (as CheckTrailCatalog's does) and fails
// the group, nothing of it committed: its callers are answered 503, no SSN.
//
//   - SQLite: the schema version (PRAGMA schema_version, which every change of the schema moves).
//     When it is not the one the last clean check saw, the whole catalog is compared with the
//     migrations' in the same transaction, after the insert whether or not it failed (a view in
//     the table's place may refuse it). The append holds the write lock from its BEGIN, so no
//     other connection changes the schema between the check and the commit.
//   - PostgreSQL, the one-statement append (appendAfter): the statement calls the writer's function
//     only when audit_events, as the statement names it, is a table and the function it calls is
//     the row the last clean check saw (its oid and the transaction that wrote it: a replaced
//     function, or one of the same name earlier on the search path, is another); otherwise it
//     calls nothing and answers NULL, and the whole catalog is read to name what differs (and, when
//     nothing does, to remember the row as clean). No round trip more. Naming audit_events in the
//     statement takes its lock before the statement's snapshot, so a rename waits for the append.
//     What the statement cannot see is a change committed between its snapshot and the function's
//     run; the next group sees it, and the signer's memory of this process's commits
//     (CommitMemory) keeps anything from being signed over it.
//   - PostgreSQL, an append in a transaction (appendLocked): after the insert, one statement reads
//     whether audit_events, as the insert named it, is a table (the insert's lock keeps the
//     relation it wrote to in place until the commit); it inserts itself, through no function.
//     The first such append of a store that no clean check has primed compares the whole catalog.
//
// A trigger, a rule or a policy that drops, alters or hides a row the read-back catches (it reads
// through them); on PostgreSQL they are left to it and to CheckTrailCatalog: planning a read of
// them, or of the functions' definitions, in every append's statement would cost each group many
// times what the check above does (BenchmarkTrailGuard measures what it costs).

// errTrailGuard means the one-statement append found the trail's table or the writer's function
// not as the last clean check saw them, and called nothing, while the whole catalog found nothing
// to name: the group is appended in a transaction instead, which checks the table again.
var errTrailGuard = errors.New("store: the audit trail's table or the writer's function is not as last checked")

// trailGuard is what an append checks of the trail's catalog in its own transaction.
type trailGuard struct {
	// schemaVersion is the engine's query of its schema version ("" when it has none, as
	// PostgreSQL: then the table and the writer's function are checked); failedEndsTx: a failed
	// statement leaves the transaction unusable (Engine.FailedStatementEndsTx). off: check nothing
	// (the benchmark of what the check costs).
	schemaVersion string
	failedEndsTx  bool
	off           bool
	// query and expected are the engine's catalog query and the lines its migrations make.
	query    string
	expected []string
	// clean is what the last clean check saw (Log.trailClean).
	clean *atomic.Pointer[string]
	// held is the log's difference found in the trail's catalog, which a check that finds one sets
	// (holdTrail, as CheckTrailCatalog does).
	held *atomic.Pointer[TrailCatalogError]
}

// trailGuard is the store's.
func (s *Log) trailGuard() trailGuard {
	query, expected := s.engine.TrailCatalog()
	lines := s.trailLines.Load()
	if lines == nil {
		l := catalogLines(expected)
		lines = &l
		s.trailLines.Store(lines)
	}
	return trailGuard{schemaVersion: s.engine.SchemaVersion(), failedEndsTx: s.engine.FailedStatementEndsTx(), off: s.withoutTrailGuard, query: query,
		expected: *lines, clean: &s.trailClean, held: &s.trailHeld}
}

// catalogLines are the lines of an expected catalog.
func catalogLines(expected []byte) []string {
	return strings.Split(strings.TrimSuffix(string(expected), "\n"), "\n")
}

// pgTableGuard is true when audit_events, as a statement of this session names it, is a table
// that no table inherits, nor audit_tree: a read of a table reads its children's rows too, so a
// trigger that moves the group's rows to a child would pass the read-back (relhassubclass is set
// once a table has had a child, until a VACUUM finds none: a trail met with one stays held).
const pgTableGuard = `SELECT relkind = 'r' AND NOT relhassubclass
  AND NOT (SELECT relhassubclass FROM pg_class WHERE oid = 'audit_tree'::regclass)
  FROM pg_class WHERE oid = 'audit_events'::regclass`

// check checks the trail's catalog in q, the transaction of an append, after its insert, which
// failed with inserted (nil when it did not): the held trail's error naming what differs, else
// inserted. A failed insert is checked after on SQLite (a view in the table's place may refuse
// the insert: the difference is what to name), not on PostgreSQL, whose failed statement ended
// the transaction's use.
func (g trailGuard) check(ctx context.Context, q *sqltx.Tx, inserted error) error {
	if g.off || inserted != nil && g.failedEndsTx {
		return inserted
	}
	if err := g.checkAfter(ctx, q); err != nil {
		return err
	}
	return inserted
}

// checkAfter is check, after an insert.
func (g trailGuard) checkAfter(ctx context.Context, q *sqltx.Tx) error {
	var version string
	switch {
	case g.schemaVersion == "":
		var table sql.NullBool
		if err := q.QueryRow(ctx, pgTableGuard).Scan(&table); err != nil {
			return fmt.Errorf("store: the audit trail's table: %w", err)
		}
		if table.Bool && g.clean.Load() == nil {
			return g.checkAndRemember(ctx, q) // once: what the one-statement append compares
		}
		if table.Bool {
			return nil
		}
	default:
		v, err := g.fingerprint(ctx, q)
		if err != nil || g.cleanIs(v) {
			return err
		}
		version = v
	}
	rows, err := q.Query(ctx, g.query)
	if err != nil {
		return fmt.Errorf("store: the audit trail's catalog: %w", err)
	}
	if err := g.compare(rows); err != nil {
		return err
	}
	if g.schemaVersion == "" {
		// The table check saw what the whole catalog does not: it changed in between. Nothing to
		// name, nothing written: refuse this group, hold nothing.
		return &TrailCatalogError{Findings: []string{"audit_events was not a table when this group was appended"}}
	}
	g.clean.Store(&version)
	return nil
}

// cleanIs: the last clean check saw v.
func (g trailGuard) cleanIs(v string) bool {
	c := g.clean.Load()
	return c != nil && *c == v
}

// refused follows the one-statement append's check that failed (it called nothing): the whole
// catalog, read on the pool, names what differs and holds the trail. When it finds nothing, the
// writer's function row is remembered as clean (checkAndRemember), and the group is appended in a
// transaction (errTrailGuard).
func (g trailGuard) refused(ctx context.Context, r runner) error {
	if err := g.checkAndRemember(ctx, r); err != nil {
		return err
	}
	return errTrailGuard
}

// checkAndRemember compares the whole catalog, read with r, with the migrations', holding the
// trail on what differs; when nothing does, it remembers as clean what the append's check compares
// (fingerprint), read before and after the catalog: the same both times, nothing changed it in
// between.
func (g trailGuard) checkAndRemember(ctx context.Context, r runner) error {
	before, err := g.fingerprint(ctx, r)
	if err != nil {
		return err
	}
	rows, err := r.Query(ctx, g.query)
	if err != nil {
		return fmt.Errorf("store: the audit trail's catalog: %w", err)
	}
	if err := g.compare(rows); err != nil {
		return err
	}
	return g.remember(ctx, r, before)
}

// remember remembers before, what the append's check compares as read before a whole catalog was
// found clean, when it still reads so.
func (g trailGuard) remember(ctx context.Context, r runner, before string) error {
	after, err := g.fingerprint(ctx, r)
	if err != nil {
		return err
	}
	if before == after && before != "" {
		g.clean.Store(&before)
	}
	return nil
}

// fingerprint is what the append's check compares with the last clean check's: SQLite's schema
// version, PostgreSQL's writer's function row ("" when there is none).
func (g trailGuard) fingerprint(ctx context.Context, r runner) (string, error) {
	if g.schemaVersion != "" {
		var v int64
		if err := readSchemaVersion(ctx, r, g.schemaVersion, &v); err != nil {
			return "", fmt.Errorf("store: the audit trail's catalog: the schema version: %w", err)
		}
		return strconv.FormatInt(v, 10), nil
	}
	var row sql.NullString
	err := r.QueryRow(ctx, `SELECT p.oid::text || ':' || p.xmin::text FROM pg_proc p WHERE p.oid = '`+g.signature(appendFunction)+`'::regprocedure`).Scan(&row)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("store: the audit trail's function %s: %w", appendFunction, err)
	}
	return row.String, nil
}

// appendReads are the statements an append's own check runs in its transaction, to be prepared
// with the writer's (prepareAuditOnce).
func (g trailGuard) appendReads() []string {
	if g.schemaVersion == "" {
		return nil
	}
	return []string{g.schemaVersion}
}

// readSchemaVersion reads the schema version (query, the engine's) into v: in an append's
// transaction with its cached statement (it is read in every one), elsewhere as a plain read.
func readSchemaVersion(ctx context.Context, r runner, query string, v *int64) error {
	if q, ok := r.(*sqltx.Tx); ok {
		return q.ReadCachedRow(ctx, query, nil, []any{v})
	}
	return r.QueryRow(ctx, query).Scan(v)
}

// compare reads the catalog's rows and holds the trail on what differs from the migrations'.
func (g trailGuard) compare(rows *sqltx.Rows) error {
	got, err := catalogRows(rows)
	if err != nil {
		return err
	}
	if findings := compareTrailCatalog(g.expected, got); len(findings) > 0 {
		return holdTrail(g.held, findings)
	}
	return nil
}

// appendFunction is the writer's function, which the one-statement append calls.
const appendFunction = "audit_chain_append_tree"

// guarded is text, a statement "SELECT audit_chain_append_tree(…)…", made to call the function
// only when audit_events is a table and the function is the row the last clean check saw, and to
// answer NULL otherwise.
func (g trailGuard) guarded(text string) string {
	if g.off {
		return text
	}
	clean := "none"
	if c := g.clean.Load(); c != nil && isRow(*c) {
		clean = *c
	}
	call := strings.TrimPrefix(text, "SELECT ")
	end := strings.Index(call, ")") + 1 // the call's arguments are placeholders: no parenthesis inside
	guard := `(SELECT c.relkind = 'r' AND NOT c.relhassubclass FROM pg_class c WHERE c.oid = 'audit_events'::regclass
	    AND NOT EXISTS (SELECT FROM audit_events WHERE false))
	  AND NOT (SELECT relhassubclass FROM pg_class WHERE oid = 'audit_tree'::regclass)
	  AND (SELECT p.oid::text || ':' || p.xmin::text FROM pg_proc p WHERE p.oid = '` + g.signature(appendFunction) + `'::regprocedure) = '` + clean + `'`
	return "SELECT CASE WHEN " + guard + " THEN " + call[:end] + " END" + call[end:]
}

// signatures holds each function's signature as regprocedure reads it, by name.
var signatures sync.Map

// signature is fn's signature as regprocedure reads it (its argument types), from the catalog the
// migrations make; for a function it lacks, one no function has.
func (g trailGuard) signature(fn string) string {
	if s, ok := signatures.Load(fn); ok {
		return s.(string)
	}
	sig := "audit_no_such_function(bigint, bytea, text)"
	for _, line := range g.expected {
		o := parseCatalogLine(line)
		if o.kind != "function" || !strings.HasPrefix(o.name, fn+"(") {
			continue
		}
		args := strings.TrimSuffix(strings.TrimPrefix(o.name, fn+"("), ")")
		var types []string
		for a := range strings.SplitSeq(args, ", ") {
			_, typ, _ := strings.Cut(a, " ") // "prev_seq bigint": the name, then the type
			types = append(types, typ)
		}
		sig = fn + "(" + strings.Join(types, ", ") + ")"
		break
	}
	signatures.Store(fn, sig)
	return sig
}

// isRow: "OID:XID", digits around one colon (put into a statement's text).
func isRow(s string) bool {
	oid, xid, ok := strings.Cut(s, ":")
	digits := func(s string) bool {
		return s != "" && strings.Trim(s, "0123456789") == ""
	}
	return ok && digits(oid) && digits(xid)
}
