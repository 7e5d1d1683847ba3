// Package sqltx is one transaction of the store and nothing more: the store's shared SQL run in
// it with the engine's placeholders, every error classified, statements prepared for it or bound
// from a cache of prepared statements.
//
// It lives below the store, which it cannot import: what a transaction's body writes goes through
// its *Tx, and an audit event it records is appended to the chain in it. A body is given, and
// captures, only values from which the connection pool cannot be reached, the *Tx being the one
// handle on the database it holds (docs/architecture.md, "Transactions"): so every method of Tx
// runs in the transaction, on its connection (Cached may first prepare its statement on the pool,
// which takes no lock). Go cannot forbid a capture; the store's
// TestTransactionBodiesReachNoPool checks every body on the type-checked code, and a body that
// reaches the store anyway meets the lock its own transaction holds, and fails after the engine's
// busy timeout (TestTransactionBodiesCannotDeadlock).
package sqltx

import (
	"context"
	"database/sql"
	"errors"
	"strings"
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

// Dialect is what a transaction needs of the engine.
type Dialect interface {
	// Rebind rewrites the shared "?" placeholders into the engine's own.
	Rebind(query string) string
	// KeepsStatements tells an engine whose connections keep a prepared statement from one
	// transaction to the next (SQLite); elsewhere a statement is its text, sent each time.
	KeepsStatements() bool
}

// Classifier marks the errors of a database that cannot answer now as unavailable, and passes
// anything else through (the store's classify).
type Classifier interface {
	Classify(err error) error
}

// Import is an engine's bulk load under way in a transaction (the store's Engine.BeginImport):
// its settings, under which the import's rows do not move the read cache's generation as they go
// in. A value, not a function, so that what it holds is in its type (see the store's
// TestTransactionBodiesReachNoPool).
type Import interface {
	// Moved moves the read cache's generation now, and takes its lock.
	Moved() error
	// End gives the settings back, whatever the outcome.
	End()
}

// Statement is a statement and the arguments it is run with, for a list of statements whose
// arguments differ from one to the next (an engine's write probe).
type Statement struct {
	SQL  string
	Args []any
}

// Tx is a transaction in progress: what the body of a transaction is given.
type Tx struct {
	tx *sql.Tx
	// conn is the connection tx was begun on, where one was held for it (nil: drawn from the
	// pool by tx itself).
	conn    *sql.Conn
	dialect Dialect
	errs    Classifier
	// stmts holds the prepared statements of the pool that Cached binds to tx (nil in a
	// read-only snapshot, which prepares nothing).
	stmts *Stmts
	// ended are told whether the transaction committed, once it ended (OnEnd).
	ended []func(committed bool)
}

// OnEnd has f told, once the transaction has ended, whether it committed (the store's audit
// chain tells the checkpoint signer what it appended).
func (t *Tx) OnEnd(f func(committed bool)) { t.ended = append(t.ended, f) }

// End tells what OnEnd registered whether the transaction committed: whoever ends it calls it,
// once.
func (t *Tx) End(committed bool) {
	for _, f := range t.ended {
		f(committed)
	}
	t.ended = nil
}

// New is the transaction tx, its statements cached in stmts (nil: none).
func New(tx *sql.Tx, d Dialect, errs Classifier, stmts *Stmts) *Tx {
	return NewOnConn(tx, nil, d, errs, stmts)
}

// NewOnConn is New for a transaction begun on conn, a connection held for it.
func NewOnConn(tx *sql.Tx, conn *sql.Conn, d Dialect, errs Classifier, stmts *Stmts) *Tx {
	return &Tx{tx: tx, conn: conn, dialect: d, errs: errs, stmts: stmts}
}

// Conn is the connection the transaction was begun on, where one was held for it (an import's,
// for an engine that copies rows in bulk on the connection, inside the transaction); nil
// otherwise.
func (t *Tx) Conn() *sql.Conn { return t.conn }

// SQL is the database/sql transaction, for an engine's own steps in it (an import's lock and
// settings, a migration's lock).
func (t *Tx) SQL() *sql.Tx { return t.tx }

// Classify is the store's classification of err (see Classifier), for errors of statements run
// through Prepare or Cached, which hand back the driver's.
func (t *Tx) Classify(err error) error { return t.errs.Classify(err) }

// Exec runs a statement that returns no rows.
func (t *Tx) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := t.tx.ExecContext(ctx, t.dialect.Rebind(query), args...)
	return res, t.errs.Classify(err)
}

// Query runs a statement that returns rows. A statement in a transaction is never run again:
// the transaction is gone with its connection.
func (t *Tx) Query(ctx context.Context, query string, args ...any) (*Rows, error) {
	r, err := t.tx.QueryContext(ctx, t.dialect.Rebind(query), args...)
	if err != nil {
		return nil, t.errs.Classify(err)
	}
	return NewRows(r, t.errs), nil
}

// QueryRow is a read of one row, run when it is scanned.
func (t *Tx) QueryRow(ctx context.Context, query string, args ...any) Row {
	return NewRow(ctx, t, query, args)
}

// ReadRow runs query and scans its one row into dest, its error classified.
func (t *Tx) ReadRow(ctx context.Context, query string, args, dest []any) error {
	return t.errs.Classify(t.tx.QueryRowContext(ctx, t.dialect.Rebind(query), args...).Scan(dest...))
}

// ReadCachedRow is ReadRow with the cached prepared statement of query (Cached): for the reads
// every write transaction of a kind makes, which would otherwise be parsed and planned each time.
func (t *Tx) ReadCachedRow(ctx context.Context, query string, args, dest []any) error {
	st, err := t.Cached(ctx, query)
	if err != nil {
		return err
	}
	defer st.Close()
	return t.errs.Classify(st.QueryRowContext(ctx, args...).Scan(dest...))
}

// Prepare prepares query for this transaction, to be run many times in it; where the engine keeps
// no statements its text is sent each time instead.
func (t *Tx) Prepare(ctx context.Context, query string) (Stmt, error) {
	if !t.dialect.KeepsStatements() {
		return unprepared{x: t.tx, text: t.dialect.Rebind(query)}, nil
	}
	st, err := t.tx.PrepareContext(ctx, t.dialect.Rebind(query))
	if err != nil {
		return nil, t.errs.Classify(err)
	}
	return st, nil
}

// Cached is the cached prepared statement of query, bound to this transaction (the text alone,
// run in it, where the engine keeps no statements). Close it when done.
func (t *Tx) Cached(ctx context.Context, query string) (Stmt, error) {
	if t.stmts == nil {
		return nil, errors.New("store: a transaction's statement asked for outside a write transaction")
	}
	text := t.dialect.Rebind(query)
	if !t.stmts.keep {
		return unprepared{x: t.tx, text: text}, nil
	}
	if st, ok := t.stmts.Lookup(text); ok {
		return t.tx.StmtContext(ctx, st), nil
	}
	st, err := t.stmts.Prepare(ctx, text)
	if err != nil {
		return nil, t.errs.Classify(err)
	}
	return t.tx.StmtContext(ctx, st), nil
}

// Rows is *sql.Rows whose errors are classified.
type Rows struct {
	*sql.Rows
	errs Classifier
}

// NewRows wraps r, its errors classified by errs.
func NewRows(r *sql.Rows, errs Classifier) *Rows { return &Rows{Rows: r, errs: errs} }

func (r *Rows) Scan(dest ...any) error { return r.errs.Classify(r.Rows.Scan(dest...)) }
func (r *Rows) Err() error             { return r.errs.Classify(r.Rows.Err()) }

// RowReader runs a read of one row and scans it: a transaction, or the store's pool (which runs
// the read again on a lost connection).
type RowReader interface {
	ReadRow(ctx context.Context, query string, args, dest []any) error
}

// Row is a read of one row, run when it is scanned (callers scan at once), its error classified.
type Row struct {
	r     RowReader
	ctx   context.Context
	query string
	args  []any
}

// NewRow is the read of query's one row by r.
func NewRow(ctx context.Context, r RowReader, query string, args []any) Row {
	return Row{r: r, ctx: ctx, query: query, args: args}
}

func (r Row) Scan(dest ...any) error { return r.r.ReadRow(r.ctx, r.query, r.args, dest) }

// ClassifiedRows is r, read from a statement of this transaction, its errors classified.
func (t *Tx) ClassifiedRows(r *sql.Rows) *Rows { return NewRows(r, t.errs) }

// Scanner reads one row's columns: *sql.Row, *sql.Rows, Row, *Rows.
type Scanner interface{ Scan(dest ...any) error }

// ValueRows is the VALUES list of n rows of width placeholders: (?, ?), (?, ?), …
func ValueRows(width, n int) string {
	row := "(" + strings.Repeat("?, ", width-1) + "?)"
	return strings.Repeat(row+", ", n-1) + row
}
