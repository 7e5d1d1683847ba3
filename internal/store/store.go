// Package store keeps the back office's records in SQL: embedded SQLite by default, PostgreSQL at
// scale. Queries are written once, in plain sight, in the SQL both engines share; the engine
// supplies how to connect, its migrations, its placeholder style and its error codes.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"
)

// Store is a handle on one database.
type Store struct {
	db     *sql.DB
	engine *engine
	now    func() time.Time
	stmts  stmtCache
	// writes, when set, queues this process's writers in Go. SQLite lets one writer in at a
	// time and makes the others poll with sleeps of a millisecond and more: under load that
	// is most of a write's latency. Writers of other processes still meet the busy timeout.
	writes *sync.Mutex
	audits auditWriter
	// background tracks writes that run after the request that caused them (last-use stamps);
	// stamping holds the credential ids being stamped, so a busy key starts one write, not many.
	background sync.WaitGroup
	stamping   sync.Map
}

// engine is what differs between SQLite and PostgreSQL.
type engine struct {
	name string
	// placeholders rewrites the shared "?" placeholders into the engine's own.
	placeholders func(string) string
	// isUniqueViolation tells a unique or primary-key violation by its error code.
	isUniqueViolation func(error) bool
	// migrations holds the engine's embedded *.sql files, applied in name order.
	migrations fs.FS
	// lock, when set, runs the migration pass under a database-wide lock.
	lock func(ctx context.Context, conn *sql.Conn, fn func() error) error
	// insertOrSkip, when set, is the engine's own spelling of an INSERT that skips rows taken by
	// a unique key, used instead of the standard INSERT … ON CONFLICT DO NOTHING.
	insertOrSkip string
	// importTuning runs at the start of an import, in its transaction, and importUntuning at its
	// end: settings for a bulk load on that one connection.
	importTuning, importUntuning []string
}

// Open connects to the database named by url ("sqlite:PATH" or "postgres://…").
func Open(ctx context.Context, url string) (*Store, error) {
	switch {
	case strings.HasPrefix(url, "sqlite:"):
		return openSQLite(ctx, strings.TrimPrefix(url, "sqlite:"))
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return openPostgres(ctx, url)
	default:
		return nil, fmt.Errorf("store: database url must start with sqlite: or postgres://")
	}
}

// Engine names the engine: "sqlite" or "postgres".
func (s *Store) Engine() string { return s.engine.name }

// Migrate applies pending schema migrations.
func (s *Store) Migrate(ctx context.Context) error { return migrate(ctx, s.db, s.engine) }

// Close waits for background writes, then releases the database. Callers stop using the store
// first (serve closes it after the HTTP server has drained).
func (s *Store) Close() error {
	s.WaitBackground()
	s.audits.stop()
	s.stmts.close()
	return s.db.Close()
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// SetClock replaces the clock, for tests.
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// DB exposes the pool for pool statistics.
func (s *Store) DB() *sql.DB { return s.db }

// querier runs shared SQL on a pool or a transaction, rewriting placeholders for the engine.
type querier struct {
	x interface {
		ExecContext(context.Context, string, ...any) (sql.Result, error)
		QueryContext(context.Context, string, ...any) (*sql.Rows, error)
		QueryRowContext(context.Context, string, ...any) *sql.Row
		PrepareContext(context.Context, string) (*sql.Stmt, error)
	}
	e *engine
	// stmts, on the pool, keeps each statement prepared once per connection: parsing and
	// planning the SQL again on every request costs more than running it.
	stmts *stmtCache
	// writes, on the pool, is held while a statement writes (see Store.writes).
	writes *sync.Mutex
}

func (q querier) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if q.writes != nil {
		q.writes.Lock()
		defer q.writes.Unlock()
	}
	if st := q.stmts.get(ctx, q.x, q.e.sql(query)); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return q.x.ExecContext(ctx, q.e.sql(query), args...)
}

func (q querier) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := q.stmts.get(ctx, q.x, q.e.sql(query)); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return q.x.QueryContext(ctx, q.e.sql(query), args...)
}

func (q querier) row(ctx context.Context, query string, args ...any) *sql.Row {
	if st := q.stmts.get(ctx, q.x, q.e.sql(query)); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return q.x.QueryRowContext(ctx, q.e.sql(query), args...)
}

// stmtCache holds the pool's prepared statements by query text. database/sql prepares a
// statement on each connection the first time it runs there, and again after a reconnect.
// The queries are the store's own constants, so the cache is bounded by the code.
type stmtCache struct {
	m sync.Map // engine text -> *sql.Stmt
}

// get returns the prepared statement of query, or nil to run it unprepared (no cache, or the
// statement does not prepare: the unprepared run then reports the error).
func (c *stmtCache) get(ctx context.Context, x interface {
	PrepareContext(context.Context, string) (*sql.Stmt, error)
}, query string) *sql.Stmt {
	if c == nil {
		return nil
	}
	if v, ok := c.m.Load(query); ok {
		return v.(*sql.Stmt)
	}
	st, err := x.PrepareContext(context.WithoutCancel(ctx), query)
	if err != nil {
		return nil
	}
	if v, loaded := c.m.LoadOrStore(query, st); loaded {
		st.Close()
		return v.(*sql.Stmt)
	}
	return st
}

func (c *stmtCache) close() {
	c.m.Range(func(k, v any) bool {
		v.(*sql.Stmt).Close()
		c.m.Delete(k)
		return true
	})
}

func (q querier) prepare(ctx context.Context, query string) (*sql.Stmt, error) {
	return q.x.PrepareContext(ctx, q.e.sql(query))
}

var rewritten sync.Map // query text -> engine text, per engine name

func (e *engine) sql(query string) string {
	if e.placeholders == nil {
		return query
	}
	key := e.name + "\x00" + query
	if v, ok := rewritten.Load(key); ok {
		return v.(string)
	}
	out := e.placeholders(query)
	rewritten.Store(key, out)
	return out
}

func (s *Store) q() querier { return querier{x: s.db, e: s.engine, stmts: &s.stmts, writes: s.writes} }

// tx runs fn in one transaction, committed when fn returns nil and rolled back on an error or a
// panic. It is scoped to one operation: never hold it across a network call, and never write
// through s.q() inside it (with queued writers, that waits for itself).
func (s *Store) tx(ctx context.Context, fn func(q querier) error) (err error) {
	if s.writes != nil {
		s.writes.Lock()
		defer s.writes.Unlock()
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err = fn(querier{x: tx, e: s.engine}); err != nil {
		return err
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// noRows turns sql.ErrNoRows into the domain's not-found sentinel.
func noRows(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return errNotFound
	}
	return err
}
