package sqltx

import (
	"context"
	"database/sql"
	"math"
	"sync"
)

// Stmts keeps one prepared statement per query text the pool runs outside transactions: the
// per-request reads (credentials, visibility, the SAM log page) would otherwise be parsed and
// planned on every call, which on SQLite is most of their cost. The texts are the store's own
// constants, so the cache stays small.
//
// On an engine whose connections may not keep a statement from one transaction to the next
// (keep false: PostgreSQL, see Engine.KeepsStatements) it prepares nothing and hands out each text
// as an unprepared statement.
type Stmts struct {
	db   *sql.DB
	keep bool
	mu   sync.Mutex
	m    map[string]*sql.Stmt
}

// NewStmts is the cache of statements prepared on db, keep telling whether the engine keeps them
// (see Dialect.KeepsStatements).
func NewStmts(db *sql.DB, keep bool) *Stmts {
	return &Stmts{db: db, keep: keep, m: map[string]*sql.Stmt{}}
}

// Stmt is a statement run many times: prepared (*sql.Stmt), or its text sent each time
// (unprepared).
type Stmt interface {
	ExecContext(ctx context.Context, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, args ...any) *sql.Row
	Close() error
}

// unprepared runs its text on x (the pool or a transaction) each time, leaving nothing on the
// connection: what a statement is where a pooler may give each transaction another connection.
type unprepared struct {
	x interface {
		ExecContext(context.Context, string, ...any) (sql.Result, error)
		QueryContext(context.Context, string, ...any) (*sql.Rows, error)
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}
	text string
}

func (u unprepared) ExecContext(ctx context.Context, args ...any) (sql.Result, error) {
	return u.x.ExecContext(ctx, u.text, args...)
}

func (u unprepared) QueryContext(ctx context.Context, args ...any) (*sql.Rows, error) {
	return u.x.QueryContext(ctx, u.text, args...)
}

func (u unprepared) QueryRowContext(ctx context.Context, args ...any) *sql.Row {
	return u.x.QueryRowContext(ctx, u.text, args...)
}

func (unprepared) Close() error { return nil }

// Get returns the statement for text: prepared (prepare), or unprepared where the engine keeps
// no statements.
func (c *Stmts) Get(ctx context.Context, text string) (Stmt, error) {
	if !c.keep {
		return unprepared{x: c.db, text: text}, nil
	}
	st, err := c.Prepare(ctx, text)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Prepare returns the prepared statement for text, preparing it on first use. Preparing is a round trip
// (and, with the database lost, a connect attempt), so it happens outside the lock: requests whose
// statements are cached never wait behind it. A failed prepare is not kept, so a statement that
// met a lost database is prepared again once it is back.
func (c *Stmts) Prepare(ctx context.Context, text string) (*sql.Stmt, error) {
	c.mu.Lock()
	st, ok := c.m[text]
	c.mu.Unlock()
	if ok {
		return st, nil
	}
	st, err := c.db.PrepareContext(ctx, text)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if first, ok := c.m[text]; ok { // prepared meanwhile by another request
		st.Close()
		return first, nil
	}
	c.m[text] = st
	return st, nil
}

// Lookup returns the statement for text if one is prepared.
func (c *Stmts) Lookup(text string) (*sql.Stmt, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.m[text]
	return st, ok
}

// Close closes every statement prepared.
func (c *Stmts) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	clear(c.m)
}

// PageOffset is how many rows precede page (from 1) of size rows. A page number so large that the
// offset would overflow is taken as the last page that does not: past any possible end, so it
// comes back empty, as any page past the end does.
func PageOffset(page, size int64) int64 {
	page = min(page, math.MaxInt64/size)
	return (page - 1) * size
}
