package store

import (
	"context"

	"backoffice/internal/auditlog"
	"backoffice/internal/store/sqltx"
)

// trailLog is the audit trail (package auditlog), embedded in the Store: its methods are the
// store's.
type trailLog = auditlog.Log

// newTrail is the audit trail on s's SQL plumbing.
func newTrail(s *Store) *auditlog.Log { return auditlog.New(trailDB{s}) }

// trailDB is the store's SQL plumbing as the audit trail runs on it (auditlog.DB).
type trailDB struct{ s *Store }

func (d trailDB) Engine() auditlog.Engine { return d.s.engine }
func (d trailDB) Pool() auditlog.Pool     { return d.s.q() }

func (d trailDB) Tx(ctx context.Context, fn func(q *sqltx.Tx) error) error {
	return d.s.tx(ctx, fn)
}

func (d trailDB) Snapshot(ctx context.Context, fn func(q *sqltx.Tx) error) error {
	return d.s.snapshot(ctx, fn)
}

func (d trailDB) Prepare(ctx context.Context, query string) error {
	_, err := d.s.stmts.Get(ctx, d.s.sql(query))
	return d.s.classify(err)
}

func (d trailDB) LostConnection(ctx context.Context, err error) bool {
	return d.s.lostConnection(ctx, err)
}

// Trail is the store's audit trail.
func (s *Store) Trail() *auditlog.Log { return s.trailLog }
