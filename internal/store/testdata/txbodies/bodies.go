// Package txbodies holds transaction bodies that break the rule TestTransactionBodiesReachNoPool
// checks, each on a line marked "want", beside bodies that keep it: the check must name exactly
// the marked lines.
package txbodies

import (
	"context"
	"database/sql"

	"backoffice/internal/sqltx"
)

// store stands for the store: it holds the pool and runs transactions.
type store struct{ db *sql.DB }

func (s *store) tx(ctx context.Context, fn func(q *sqltx.Tx) error) error { return nil }

func (s *store) load(ctx context.Context, fn func(conn *sql.Conn, q *sqltx.Tx) error) error {
	return nil
}

func (s *store) record(ctx context.Context) error { return nil }

func (s *store) body(q *sqltx.Tx) error { return nil }

type recorder interface {
	record(ctx context.Context) error
}

// chain is data and a transaction's own steps: what a body may hold.
type chain struct {
	keyID string
	rows  []any
}

func (c chain) append(ctx context.Context, q *sqltx.Tx) error {
	_, err := q.Exec(ctx, `INSERT INTO t VALUES (?)`, c.keyID)
	return err
}

func broken(ctx context.Context, s *store, v any) {
	var r recorder = s
	rec := s.record
	call := func() error { return s.record(ctx) }
	_ = s.tx(ctx, func(q *sqltx.Tx) error {
		return s.record(ctx) // want: the store, captured
	})
	_ = s.tx(ctx, func(q *sqltx.Tx) error {
		return r.record(ctx) // want: an interface holding the store
	})
	_ = s.tx(ctx, func(q *sqltx.Tx) error {
		return rec(ctx) // want: a method value of the store
	})
	_ = s.tx(ctx, func(q *sqltx.Tx) error {
		return call() // want: a function that captures the store
	})
	_ = s.tx(ctx, func(q *sqltx.Tx) error {
		errc := make(chan error, 1)
		go func() { errc <- s.record(ctx) }() // want: the store, on a goroutine
		return <-errc
	})
	_ = s.tx(ctx, func(q *sqltx.Tx) error {
		return v.(*store).record(ctx) // want: the store, asserted
	})
	_ = s.load(ctx, func(conn *sql.Conn, q *sqltx.Tx) error { return nil }) // want: given a connection
	_ = s.tx(ctx, s.body)                                                   // want: a method of the store
	body := func(q *sqltx.Tx) error {
		_, err := s.db.ExecContext(ctx, `DELETE FROM t`) // want: the store, in a body made first
		return err
	}
	_ = s.tx(ctx, body)
}

func kept(ctx context.Context, s *store, keyID string) {
	c := chain{keyID: keyID}
	var n int
	_ = s.tx(ctx, func(q *sqltx.Tx) error {
		n++
		return c.append(ctx, q)
	})
	_ = s.tx(ctx, plainBody)
}

func plainBody(q *sqltx.Tx) error { return nil }
