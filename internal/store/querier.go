package store

import (
	"context"
	"database/sql"

	"backoffice/internal/store/sqltx"
)

// querier runs shared SQL on the pool, outside any transaction: each query a cached prepared
// statement (stmts), its placeholders rewritten for the engine, a write holding this process's
// writers' lock (see Store.writes). A transaction's statements run through *sqltx.Tx instead.
type querier struct {
	s *Store
}

// runner is what a read or a write of the store needs, on the pool (querier) or in a transaction
// (*sqltx.Tx), for the few queries run both ways.
type runner interface {
	Exec(ctx context.Context, query string, args ...any) (sql.Result, error)
	Query(ctx context.Context, query string, args ...any) (*sqltx.Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) sqltx.Row
}

// Every error the querier hands back has been through classify, so that a lost database reads as
// ErrUnavailable wherever the store wraps it.

func (q querier) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := q.s.writes.lock(ctx); err != nil {
		return nil, err
	}
	defer q.s.writes.unlock()
	if err := q.s.beforeWrite(); err != nil {
		return nil, err
	}
	st, err := q.s.stmts.Get(ctx, q.s.sql(query))
	if err != nil {
		return nil, q.s.classify(err)
	}
	res, err := st.ExecContext(ctx, args...)
	return res, q.s.classify(err)
}

// WriteRow is Exec for a write that answers one row, scanned into dest (sql.ErrNoRows when it
// answers none). Like Exec it is never run again.
func (q querier) WriteRow(ctx context.Context, query string, dest []any, args ...any) error {
	if err := q.s.writes.lock(ctx); err != nil {
		return err
	}
	defer q.s.writes.unlock()
	if err := q.s.beforeWrite(); err != nil {
		return err
	}
	st, err := q.s.stmts.Get(ctx, q.s.sql(query))
	if err != nil {
		return q.s.classify(err)
	}
	return q.s.classify(st.QueryRowContext(ctx, args...).Scan(dest...))
}

// Query and QueryRow are the reads. A read that met a connection the server had lost is run
// again (see again). Writes go through Exec, never through these.

func (q querier) Query(ctx context.Context, query string, args ...any) (*sqltx.Rows, error) {
	r, err := q.runQuery(ctx, query, args...)
	for tries := q.s.pool.lostTries(); tries > 0 && q.again(ctx, err); tries-- {
		r, err = q.runQuery(ctx, query, args...)
	}
	if err != nil {
		return nil, q.s.classify(err)
	}
	return sqltx.NewRows(r, errClassifier(q)), nil
}

func (q querier) runQuery(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := q.s.stmts.Get(ctx, q.s.sql(query))
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// QueryRow is a read of one row, run when it is scanned. A lost connection can show after the
// row came (the server ended the process before the statement's end), so the whole read is what
// runs again (see again).
func (q querier) QueryRow(ctx context.Context, query string, args ...any) sqltx.Row {
	return sqltx.NewRow(ctx, q, query, args)
}

// ReadRow runs a row's statement and scans its one row into dest, again on a lost connection.
func (q querier) ReadRow(ctx context.Context, query string, args, dest []any) error {
	err := q.scanRow(ctx, query, args, dest)
	for tries := q.s.pool.lostTries(); tries > 0 && q.again(ctx, err); tries-- {
		err = q.scanRow(ctx, query, args, dest)
	}
	return q.s.classify(err)
}

func (q querier) scanRow(ctx context.Context, query string, args, dest []any) error {
	st, err := q.s.stmts.Get(ctx, q.s.sql(query))
	if err != nil {
		return err
	}
	return st.QueryRowContext(ctx, args...).Scan(dest...)
}

// again tells whether a read on the pool that failed with err is to be run again: it met a
// connection the server had lost (see Store.lostConnection), and the read changed nothing.
func (q querier) again(ctx context.Context, err error) bool {
	return q.s.lostConnection(ctx, err)
}

// errClassifier is the store's classify for the transactions and rows of sqltx.
type errClassifier struct{ s *Store }

func (c errClassifier) Classify(err error) error { return c.s.classify(err) }
