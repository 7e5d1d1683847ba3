// Package sqltx is how the store's shared SQL reaches the database: on the pool (DB), or in one
// transaction (Tx), with the engine's placeholders, every error classified, statements prepared
// once or bound from the cache of prepared statements (Stmts), this process's writers queued
// where the engine lets one in at a time.
//
// It lives below the store, which it cannot import: the store and the audit trail (auditlog) both
// run on a *DB. What a transaction's body writes goes through its *Tx, and an audit event it
// records is appended to the chain in it. A body is given, and captures, only values from which
// the connection pool cannot be reached, the *Tx being the one handle on the database it holds
// (docs/architecture.md, "Transactions"): so every method of Tx runs in the transaction, on its
// connection (Cached may first prepare its statement on the pool, which takes no lock). Go cannot
// forbid a capture; the store's TestTransactionBodiesReachNoPool checks every body on the
// type-checked code, and a body that reaches the pool anyway meets the lock its own transaction
// holds, and fails after the engine's busy timeout (TestTransactionBodiesCannotDeadlock).
package sqltx

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ErrWriteWait means a write waited the engine's busy timeout for a lock held by a transaction of
// this process: SQLite's write lock, which this process's writers take in Go (writeLock), or on
// PostgreSQL the audit chain's turn. Either a transaction held it that long, or, the likely cause,
// a transaction's body called back into the store: RecordAudit, a write on the pool or another
// transaction started inside a transaction's body (directly, through an interface or a method
// value, or on a goroutine the body waits for) waits for the lock its own transaction holds. A
// transaction records its audit event in itself, with the audit chain's Append (auditlog.Chain), never through the store.
// It is answered as unavailable (try again), as another process's lock past the busy timeout is.
var ErrWriteWait = errors.New("store: waited the busy timeout for a lock a transaction of this process holds (a transaction's body calling back into the store, such as RecordAudit inside it, waits for itself)")

// Engine is what the pool and its transactions need of the database's engine (the store's Engine
// has it all).
type Engine interface {
	// Rebind rewrites the shared "?" placeholders into the engine's own.
	Rebind(query string) string
	// KeepsStatements tells an engine whose connections keep a prepared statement from one
	// transaction to the next (SQLite); elsewhere a statement is its text, sent each time.
	KeepsStatements() bool
	// SnapshotIsolation is the level at which a read-only transaction sees one state.
	SnapshotIsolation() sql.IsolationLevel
	// SingleWriter tells an engine that lets one writer in at a time.
	SingleWriter() bool
	// BeforeWrite fails when a write would be lost (SQLite: the file opened is no longer at its
	// path).
	BeforeWrite() error
	// IsConnectionLost, IsBusy and IsUnwritable tell the engine's errors of a database that
	// cannot answer now (Classify).
	IsConnectionLost(err error) bool
	IsBusy(err error) bool
	IsUnwritable(err error) bool
}

// Pool is how the pool's connections are kept, as far as its statements care.
type Pool struct {
	// MaxIdle is the pool's idle limit, restored after its idle connections were dropped.
	MaxIdle int
	// LostTries is how many times an operation that met a lost connection is tried again (see
	// LostConnection): once per connection the pool may hold, and once more.
	LostTries int
	// BusyWait is how long a writer of this process waits for another's lock, on an engine of
	// one writer at a time: the engine's busy timeout, which writers of other processes wait.
	BusyWait time.Duration
}

// DB is the store's pool: shared SQL run on it outside any transaction (each query a cached
// prepared statement, a write holding this process's writers' lock), and its transactions (Tx,
// Snapshot).
type DB struct {
	db     *sql.DB
	engine Engine
	pool   Pool
	stmts  *Stmts
	// writes, for an engine with a single writer, queues this process's writers in Go, each for
	// at most the engine's busy timeout (see writeLock); nil elsewhere. Writers of other
	// processes meet the engine's own lock and the same timeout.
	writes *writeLock
}

// NewDB is the pool db of engine e.
func NewDB(db *sql.DB, e Engine, p Pool) *DB {
	d := &DB{db: db, engine: e, pool: p, stmts: NewStmts(db, e.KeepsStatements())}
	if e.SingleWriter() {
		d.writes = newWriteLock(p.BusyWait)
	}
	return d
}

// Close closes the statements prepared on the pool; the pool itself is its opener's to close.
func (d *DB) Close() { d.stmts.Close() }

// Exec runs a write on the pool, never run again.
func (d *DB) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := d.startWrite(ctx, query)
	if err != nil {
		return nil, err
	}
	defer d.writes.unlock()
	res, err := st.ExecContext(ctx, args...)
	return res, d.Classify(err)
}

// WriteRow is Exec for a write that answers one row, scanned into dest (sql.ErrNoRows when it
// answers none).
func (d *DB) WriteRow(ctx context.Context, query string, dest []any, args ...any) error {
	st, err := d.startWrite(ctx, query)
	if err != nil {
		return err
	}
	defer d.writes.unlock()
	return d.Classify(st.QueryRowContext(ctx, args...).Scan(dest...))
}

// startWrite takes the writers' lock, makes the engine's write check and gives the statement; the
// caller unlocks once it has run.
func (d *DB) startWrite(ctx context.Context, query string) (Stmt, error) {
	if err := d.writes.lock(ctx); err != nil {
		return nil, err
	}
	if err := d.BeforeWrite(); err != nil {
		d.writes.unlock()
		return nil, err
	}
	st, err := d.stmts.Get(ctx, d.engine.Rebind(query))
	if err != nil {
		d.writes.unlock()
		return nil, d.Classify(err)
	}
	return st, nil
}

// Query is a read on the pool, run again when it met a connection the server had lost (see
// LostConnection). Writes go through Exec, never through the reads.
func (d *DB) Query(ctx context.Context, query string, args ...any) (*Rows, error) {
	r, err := d.runQuery(ctx, query, args...)
	for tries := d.pool.LostTries; tries > 0 && d.LostConnection(ctx, err); tries-- {
		r, err = d.runQuery(ctx, query, args...)
	}
	if err != nil {
		return nil, d.Classify(err)
	}
	return NewRows(r, d), nil
}

func (d *DB) runQuery(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := d.stmts.Get(ctx, d.engine.Rebind(query))
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// QueryRow is a read of one row on the pool, run when it is scanned. A lost connection can show
// after the row came (the server ended the process before the statement's end), so the whole read
// is what runs again.
func (d *DB) QueryRow(ctx context.Context, query string, args ...any) Row {
	return NewRow(ctx, d, query, args)
}

// ReadRow runs a row's statement on the pool and scans its one row into dest, again on a lost
// connection.
func (d *DB) ReadRow(ctx context.Context, query string, args, dest []any) error {
	err := d.scanRow(ctx, query, args, dest)
	for tries := d.pool.LostTries; tries > 0 && d.LostConnection(ctx, err); tries-- {
		err = d.scanRow(ctx, query, args, dest)
	}
	return d.Classify(err)
}

func (d *DB) scanRow(ctx context.Context, query string, args, dest []any) error {
	st, err := d.stmts.Get(ctx, d.engine.Rebind(query))
	if err != nil {
		return err
	}
	return st.QueryRowContext(ctx, args...).Scan(dest...)
}

// Prepare prepares query on the pool, for the transactions to bind (Tx.Cached), its error
// classified.
func (d *DB) Prepare(ctx context.Context, query string) error {
	_, err := d.stmts.Get(ctx, d.engine.Rebind(query))
	return d.Classify(err)
}

// Tx runs fn in one transaction, committed when fn returns nil and rolled back on an error or a
// panic. It is scoped to one operation: never hold it across a network call. fn is given the
// transaction, and what it writes goes through it: an audit event of the operation is appended to
// the chain in it (auditlog.Chain.Append), and commits or rolls back with the rest.
//
// fn is given, and captures, only values from which the connection pool cannot be reached: the
// transaction and data, never the store nor this DB (the rule in docs/architecture.md,
// "Transactions").
func (d *DB) Tx(ctx context.Context, fn func(q *Tx) error) error {
	return d.TxOn(ctx, func() (*sql.Tx, *sql.Conn, error) {
		tx, err := d.db.BeginTx(ctx, nil)
		return tx, nil, err
	}, fn)
}

// TxOn is Tx in the transaction begin opens (on the pool, or on a connection held for it, which
// the *Tx carries): this process's writers queued and the engine's write check made first, begun
// again when the connection it drew had been lost, committed when fn returns nil, rolled back on
// an error or a panic. fn keeps Tx's rule.
func (d *DB) TxOn(ctx context.Context, begin func() (*sql.Tx, *sql.Conn, error), fn func(q *Tx) error) (err error) {
	if err := d.writes.lock(ctx); err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	defer d.writes.unlock()
	if err := d.BeforeWrite(); err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	tx, conn, err := d.begin(ctx, begin)
	if err != nil {
		return fmt.Errorf("store: begin: %w", d.Classify(err))
	}
	q := &Tx{tx: tx, conn: conn, db: d, stmts: d.stmts}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			q.end(false)
			panic(p)
		}
		if err != nil {
			_ = tx.Rollback()
		}
		q.end(err == nil)
	}()
	if err = fn(q); err != nil {
		return err
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", d.Classify(err))
	}
	return nil
}

// begin runs begin, and again when the connection it drew had been lost (see LostConnection): the
// transaction never began, so nothing was written.
func (d *DB) begin(ctx context.Context, begin func() (*sql.Tx, *sql.Conn, error)) (*sql.Tx, *sql.Conn, error) {
	tx, conn, err := begin()
	for tries := d.pool.LostTries; tries > 0 && d.LostConnection(ctx, err); tries-- {
		tx, conn, err = begin()
	}
	return tx, conn, err
}

// Snapshot runs fn in a read-only transaction that sees one consistent state of the database and
// blocks no writer: a plain deferred transaction on SQLite (in WAL mode a reader keeps its
// snapshot), REPEATABLE READ on PostgreSQL. For long reads such as an export. fn keeps Tx's rule.
func (d *DB) Snapshot(ctx context.Context, fn func(q *Tx) error) error {
	q, end, err := d.OpenSnapshot(ctx)
	if err != nil {
		return err
	}
	defer end()
	return fn(q)
}

// OpenSnapshot begins the transaction of a snapshot, which end ends: for a read that runs beside
// a transaction of another store (a copy), which a body could not start.
func (d *DB) OpenSnapshot(ctx context.Context) (q *Tx, end func(), err error) {
	tx, _, err := d.begin(ctx, func() (*sql.Tx, *sql.Conn, error) {
		tx, err := d.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: d.engine.SnapshotIsolation()})
		return tx, nil, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store: begin: %w", d.Classify(err))
	}
	return &Tx{tx: tx, db: d}, func() { _ = tx.Rollback() }, nil
}

// Tx is a transaction in progress: what the body of a transaction is given.
type Tx struct {
	tx *sql.Tx
	// conn is the connection tx was begun on, where one was held for it (nil: drawn from the
	// pool by tx itself).
	conn *sql.Conn
	// db gives the engine's placeholders and the classification of errors; no method of Tx runs
	// a statement on it.
	db *DB
	// stmts holds the prepared statements of the pool that Cached binds to tx (nil in a
	// read-only snapshot, which prepares nothing).
	stmts *Stmts
	// ended are told whether the transaction committed, once it ended (OnEnd).
	ended []func(committed bool)
}

// OnEnd has f told, once the transaction has ended, whether it committed (the store's audit
// chain tells the checkpoint signer what it appended).
func (t *Tx) OnEnd(f func(committed bool)) { t.ended = append(t.ended, f) }

func (t *Tx) end(committed bool) {
	for _, f := range t.ended {
		f(committed)
	}
	t.ended = nil
}

// Conn is the connection the transaction was begun on, where one was held for it (an import's,
// for an engine that copies rows in bulk on the connection, inside the transaction); nil
// otherwise.
func (t *Tx) Conn() *sql.Conn { return t.conn }

// SQL is the database/sql transaction, for an engine's own steps in it (an import's lock and
// settings, a migration's lock).
func (t *Tx) SQL() *sql.Tx { return t.tx }

// Classify is DB.Classify, for errors of statements run through Prepare or Cached, which hand
// back the driver's.
func (t *Tx) Classify(err error) error { return t.db.Classify(err) }

// Exec runs a statement that returns no rows.
func (t *Tx) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := t.tx.ExecContext(ctx, t.db.engine.Rebind(query), args...)
	return res, t.Classify(err)
}

// Query runs a statement that returns rows. A statement in a transaction is never run again:
// the transaction is gone with its connection.
func (t *Tx) Query(ctx context.Context, query string, args ...any) (*Rows, error) {
	r, err := t.tx.QueryContext(ctx, t.db.engine.Rebind(query), args...)
	if err != nil {
		return nil, t.Classify(err)
	}
	return NewRows(r, t.db), nil
}

// QueryRow is a read of one row, run when it is scanned.
func (t *Tx) QueryRow(ctx context.Context, query string, args ...any) Row {
	return NewRow(ctx, t, query, args)
}

// ReadRow runs query and scans its one row into dest, its error classified.
func (t *Tx) ReadRow(ctx context.Context, query string, args, dest []any) error {
	return t.Classify(t.tx.QueryRowContext(ctx, t.db.engine.Rebind(query), args...).Scan(dest...))
}

// ReadCachedRow is ReadRow with the cached prepared statement of query (Cached): for the reads
// every write transaction of a kind makes, which would otherwise be parsed and planned each time.
func (t *Tx) ReadCachedRow(ctx context.Context, query string, args, dest []any) error {
	st, err := t.Cached(ctx, query)
	if err != nil {
		return err
	}
	defer st.Close()
	return t.Classify(st.QueryRowContext(ctx, args...).Scan(dest...))
}

// Prepare prepares query for this transaction, to be run many times in it; where the engine keeps
// no statements its text is sent each time instead.
func (t *Tx) Prepare(ctx context.Context, query string) (Stmt, error) {
	text := t.db.engine.Rebind(query)
	if !t.db.engine.KeepsStatements() {
		return unprepared{x: t.tx, text: text}, nil
	}
	st, err := t.tx.PrepareContext(ctx, text)
	if err != nil {
		return nil, t.Classify(err)
	}
	return st, nil
}

// Cached is the cached prepared statement of query, bound to this transaction (the text alone,
// run in it, where the engine keeps no statements). Close it when done. A text the pool has not
// prepared yet is prepared on this transaction's own connection, for it alone: preparing it on the
// pool would need a second connection, which a pool of one never has while this transaction holds
// its own. Texts a kind of transaction runs every time are prepared on the pool beforehand
// (DB.Prepare), outside any transaction.
func (t *Tx) Cached(ctx context.Context, query string) (Stmt, error) {
	if t.stmts == nil {
		return nil, errors.New("store: a transaction's statement asked for outside a write transaction")
	}
	text := t.db.engine.Rebind(query)
	if !t.stmts.keep {
		return unprepared{x: t.tx, text: text}, nil
	}
	if st, ok := t.stmts.Lookup(text); ok {
		return t.tx.StmtContext(ctx, st), nil
	}
	st, err := t.tx.PrepareContext(ctx, text)
	if err != nil {
		return nil, t.Classify(err)
	}
	return st, nil
}

// ClassifiedRows is r, read from a statement of this transaction, its errors classified.
func (t *Tx) ClassifiedRows(r *sql.Rows) *Rows { return NewRows(r, t.db) }
