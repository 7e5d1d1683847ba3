package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"

	"backoffice/internal/store/sqltx"
)

// The trail's catalog, checked in the transaction of every append. CheckTrailCatalog runs at
// start and before each checkpoint; between two checks, something made in the database that
// fools the read-back as well as the write would have decrypts served without their events: a
// view renamed into audit_events' place whose INSTEAD OF trigger keeps decrypts where only the
// writing transaction sees them, or (PostgreSQL) an audit_chain_append_read replaced by one that
// writes nothing and answers as if it had. So each append checks, in its own transaction, what
// its read-back cannot see, and a difference holds the trail (as CheckTrailCatalog's does) and
// fails the group, nothing of it committed: its callers are answered 503, no SSN.
//
//   - SQLite: the whole catalog, compared with the migrations' (the lines CheckTrailCatalog
//     compares). The append holds the write lock from its BEGIN, so no other connection changes
//     the schema between the check and the commit. It reads a few rows of sqlite_schema in this
//     process, no round trip.
//   - PostgreSQL, the one-statement append (appendAfter): the statement itself calls the writer's
//     function only when audit_events, as the statement names it, is a table and the function it
//     calls is the migrations' (its definition hashed as the catalog's line for it is); otherwise
//     it calls nothing and answers NULL, and the group is appended in a transaction instead, which
//     finds what differs. No round trip more. Naming audit_events in the statement takes its lock
//     before the statement's snapshot, so a rename waits for the append to commit.
//   - PostgreSQL, an append in a transaction (appendLocked): after the insert, one statement reads
//     whether audit_events, as the insert named it, is a table (the insert's lock keeps the
//     relation it wrote to in place until the commit).
//
// A trigger, a rule or a policy that drops, alters or hides a row the read-back catches (it reads
// through them), and on PostgreSQL they are left to it and to CheckTrailCatalog: reading them in
// every append would cost each group most of a millisecond of the server's planning. Where the
// cheap check fails, the whole catalog is read in the same transaction to name what differs.

// errTrailGuard means the one-statement append found the trail's table or the writer's function
// not as the migrations made them, and called nothing: the group is appended in a transaction,
// which reads what differs (trailGuard.check).
var errTrailGuard = errors.New("store: the audit trail's table or the writer's function is not what the migrations made")

// trailGuard is what an append checks of the trail's catalog in its own transaction.
type trailGuard struct {
	// engine is the engine's name; off: check nothing (the benchmark of what the check costs).
	engine string
	off    bool
	// query and expected are the engine's catalog query and the lines its migrations make.
	query    string
	expected []string
	// hold holds the trail on the findings (as CheckTrailCatalog does) and returns the held error.
	hold func(findings []string) error
}

// trailGuard is the store's.
func (s *Store) trailGuard() trailGuard {
	query, expected := s.engine.TrailCatalog()
	lines, ok := expectedLines.Load(s.engine.Name())
	if !ok {
		lines, _ = expectedLines.LoadOrStore(s.engine.Name(), catalogLines(expected))
	}
	return trailGuard{engine: s.engine.Name(), off: s.withoutTrailGuard, query: query,
		expected: lines.([]string), hold: s.holdTrail}
}

// expectedLines are the lines of each engine's expected catalog, split once.
var expectedLines sync.Map

// catalogLines are the lines of an expected catalog.
func catalogLines(expected []byte) []string {
	return strings.Split(strings.TrimSuffix(string(expected), "\n"), "\n")
}

// pgTableGuard is true when audit_events, as a statement of this session names it, is a table.
const pgTableGuard = `SELECT relkind = 'r' FROM pg_class WHERE oid = 'audit_events'::regclass`

// check checks the trail's catalog in q, the transaction of an append, after its insert: nil, or
// the held trail's error naming what differs.
func (g trailGuard) check(ctx context.Context, q *sqltx.Tx) error {
	if g.off {
		return nil
	}
	if g.engine == "postgres" {
		var table sql.NullBool
		if err := q.QueryRow(ctx, pgTableGuard).Scan(&table); err != nil {
			return fmt.Errorf("store: the audit trail's table: %w", err)
		}
		if table.Bool {
			return nil
		}
	}
	st, err := q.Cached(ctx, g.query)
	if err != nil {
		return fmt.Errorf("store: the audit trail's catalog: %w", err)
	}
	defer st.Close()
	rows, err := st.QueryContext(ctx)
	if err != nil {
		return fmt.Errorf("store: the audit trail's catalog: %w", q.Classify(err))
	}
	if err := g.compare(q.ClassifiedRows(rows)); err != nil || g.engine != "postgres" {
		return err
	}
	// The table check saw what the whole catalog does not: it changed in between. Nothing to
	// name, nothing written: refuse this group, hold nothing.
	return &TrailCatalogError{Findings: []string{"audit_events was not a table when this group was appended"}}
}

// refused is the one-statement append's check that failed (it called nothing): the whole catalog,
// read on the pool, names what differs and holds the trail; when it finds nothing (changed back
// since), errTrailGuard, and the group is appended in a transaction, which checks again.
func (g trailGuard) refused(ctx context.Context, r runner) error {
	rows, err := r.Query(ctx, g.query)
	if err != nil {
		return fmt.Errorf("store: the audit trail's catalog: %w", err)
	}
	if err := g.compare(rows); err != nil {
		return err
	}
	return errTrailGuard
}

// compare reads the catalog's rows and holds the trail on what differs from the migrations'.
func (g trailGuard) compare(rows *sqltx.Rows) error {
	got, err := catalogRows(rows)
	if err != nil {
		return err
	}
	if findings := compareTrailCatalog(g.expected, got); len(findings) > 0 {
		return g.hold(findings)
	}
	return nil
}

// guardedCalls holds the one-statement append's text with its check, by the text without it.
var guardedCalls sync.Map

// guarded is text, a statement that calls the writer's function fn ("SELECT fn(…)…"), made to call it
// only when audit_events is a table and fn's definition is the one the migrations make, and to
// answer NULL otherwise. A function the migrations do not make is never called.
func (g trailGuard) guarded(text, fn string) string {
	if g.off {
		return text
	}
	if t, ok := guardedCalls.Load(text); ok {
		return t.(string)
	}
	call := strings.TrimPrefix(text, "SELECT ")
	end := strings.Index(call, ")") + 1 // the call's arguments are placeholders: no parenthesis inside
	sig, def := g.function(fn)
	guard := `(SELECT c.relkind = 'r' FROM pg_class c WHERE c.oid = 'audit_events'::regclass
	    AND NOT EXISTS (SELECT FROM audit_events WHERE false))
	  AND (SELECT encode(sha256(convert_to(concat_ws(E'\n', l.lanname, p.provolatile::text, p.prosecdef::text,
	         coalesce(p.proconfig::text, ''), pg_get_function_result(p.oid), p.prosrc), 'UTF8')), 'hex')
	       FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang WHERE p.oid = '` + sig + `'::regprocedure) = '` + def + `'`
	t := "SELECT CASE WHEN " + guard + " THEN " + call[:end] + " END" + call[end:]
	guardedCalls.Store(text, t)
	return t
}

// function is fn's signature as regprocedure reads it (its argument types) and the hash of its
// definition, from the catalog the migrations make; for a function it lacks, a definition no
// function's hash is, so that the guard is never true.
func (g trailGuard) function(fn string) (signature, def string) {
	for _, line := range g.expected {
		o := parseCatalogLine(line)
		if o.kind != "function" || !strings.HasPrefix(o.name, fn+"(") || !isHex(o.def) {
			continue
		}
		args := strings.TrimSuffix(strings.TrimPrefix(o.name, fn+"("), ")")
		var types []string
		for a := range strings.SplitSeq(args, ", ") {
			_, typ, _ := strings.Cut(a, " ") // "prev_seq bigint": the name, then the type
			types = append(types, typ)
		}
		return fn + "(" + strings.Join(types, ", ") + ")", o.def
	}
	return "pg_catalog.now()", "none"
}

// isHex: only hexadecimal digits (a hash from the golden file, put into a statement's text).
func isHex(s string) bool {
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return s != ""
}
