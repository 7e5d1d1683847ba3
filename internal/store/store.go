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
	stmts  *stmtCache
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

func newStore(db *sql.DB, e *engine) *Store {
	return &Store{db: db, engine: e, now: time.Now, stmts: newStmtCache(db)}
}

// engine is what differs between SQLite and PostgreSQL.
type engine struct {
	name string
	// placeholders rewrites the shared "?" placeholders into the engine's own; rewritten keeps
	// what it made, per query text (the store's own constants, so it stays small).
	placeholders func(string) string
	rewritten    sync.Map
	// isUniqueViolation tells a unique or primary-key violation by its error code.
	isUniqueViolation func(error) bool
	// purge, when set, runs after a deletion that must not leave the deleted bytes on disk.
	purge []string
	// snapshotIsolation is the isolation level at which a read-only transaction sees one state.
	snapshotIsolation sql.IsolationLevel
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
	// unavailable, when set, tells the engine's own connection-level errors (see classify).
	unavailable func(error) bool
	// lost, when set, runs when an error says the database was lost (see classify).
	lost func()
	// importLock, when set, makes imports wait for each other inside their transactions: two
	// imports numbering the same entity's SAM logs at once would give positions twice. (SQLite
	// needs none: its write transactions already run one at a time.)
	importLock func(ctx context.Context, q querier) error
}

// Open connects to the database named by url ("sqlite:PATH" or "postgres://…") and checks that
// it answers. Without options the pool is DefaultPool.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	o := collect(opts)
	switch {
	case strings.HasPrefix(url, "sqlite:"):
		return openSQLite(ctx, strings.TrimPrefix(url, "sqlite:"), o)
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return openPostgres(ctx, url, o)
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
func (s *Store) Ping(ctx context.Context) error { return s.engine.classify(s.db.PingContext(ctx)) }

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
	// stmts, on the pool (never in a transaction), runs each query as a cached prepared statement.
	stmts *stmtCache
	// writes, on the pool, is held while a statement writes (see Store.writes).
	writes *sync.Mutex
}

// Every error the querier hands back has been through classify, so that a lost database reads as
// ErrUnavailable wherever the store wraps it.

func (q querier) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if q.writes != nil {
		q.writes.Lock()
		defer q.writes.Unlock()
	}
	if q.stmts == nil {
		res, err := q.x.ExecContext(ctx, q.e.sql(query), args...)
		return res, q.e.classify(err)
	}
	st, err := q.stmts.get(ctx, q.e.sql(query))
	if err != nil {
		return nil, q.e.classify(err)
	}
	res, err := st.ExecContext(ctx, args...)
	return res, q.e.classify(err)
}

func (q querier) query(ctx context.Context, query string, args ...any) (*rows, error) {
	var r *sql.Rows
	var err error
	if q.stmts == nil {
		r, err = q.x.QueryContext(ctx, q.e.sql(query), args...)
	} else {
		var st *sql.Stmt
		if st, err = q.stmts.get(ctx, q.e.sql(query)); err == nil {
			r, err = st.QueryContext(ctx, args...)
		}
	}
	if err != nil {
		return nil, q.e.classify(err)
	}
	return &rows{Rows: r, e: q.e}, nil
}

func (q querier) row(ctx context.Context, query string, args ...any) row {
	if q.stmts == nil {
		return row{r: q.x.QueryRowContext(ctx, q.e.sql(query), args...), e: q.e}
	}
	st, err := q.stmts.get(ctx, q.e.sql(query))
	if err != nil {
		return row{err: err, e: q.e}
	}
	return row{r: st.QueryRowContext(ctx, args...), e: q.e}
}

func (q querier) prepare(ctx context.Context, query string) (*sql.Stmt, error) {
	st, err := q.x.PrepareContext(ctx, q.e.sql(query))
	return st, q.e.classify(err)
}

// rows is *sql.Rows whose errors are classified.
type rows struct {
	*sql.Rows
	e *engine
}

func (r *rows) Scan(dest ...any) error { return r.e.classify(r.Rows.Scan(dest...)) }
func (r *rows) Err() error             { return r.e.classify(r.Rows.Err()) }

// row is *sql.Row whose error, reported by Scan, is classified. err is a failed prepare.
type row struct {
	r   *sql.Row
	err error
	e   *engine
}

func (r row) Scan(dest ...any) error {
	if r.err != nil {
		return r.e.classify(r.err)
	}
	return r.e.classify(r.r.Scan(dest...))
}

func (e *engine) sql(query string) string {
	if e.placeholders == nil {
		return query
	}
	if v, ok := e.rewritten.Load(query); ok {
		return v.(string)
	}
	out := e.placeholders(query)
	e.rewritten.Store(query, out)
	return out
}

func (s *Store) q() querier {
	return querier{x: s.db, e: s.engine, stmts: s.stmts, writes: s.writes}
}

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
		return fmt.Errorf("store: begin: %w", s.engine.classify(err))
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
		return fmt.Errorf("store: commit: %w", s.engine.classify(err))
	}
	return nil
}

// snapshot runs fn in a read-only transaction that sees one consistent state of the database and
// blocks no writer: a plain deferred transaction on SQLite (in WAL mode a reader keeps its
// snapshot), REPEATABLE READ on PostgreSQL. For long reads such as an export.
func (s *Store) snapshot(ctx context.Context, fn func(q querier) error) error {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: s.engine.snapshotIsolation})
	if err != nil {
		return fmt.Errorf("store: begin: %w", s.engine.classify(err))
	}
	defer tx.Rollback()
	return fn(querier{x: tx, e: s.engine})
}

// noRows turns sql.ErrNoRows into the domain's not-found sentinel.
func noRows(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return errNotFound
	}
	return err
}
