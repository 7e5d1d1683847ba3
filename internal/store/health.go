package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"backoffice/internal/sqltx"
)

// probeRow is what the write probe writes where the engine's statements take a row: larger than
// a page (SQLite's are 4 KiB), so that SQLite must find four new pages for it, as an insert does
// once the pages it has are full; random, so that no engine stores it smaller than it is.
var probeRow = func() []byte {
	b := make([]byte, 16<<10)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return b
}()

// errProbed ends a write probe whose transaction is not to be committed: it rolls back.
var errProbed = errors.New("store: write probe done")

// Writable checks that the database takes, now, the writes a request makes, as each engine can
// tell best (Engine.Room, Engine.WriteProbe). On SQLite: the path still names the file that was
// opened, its filesystem is writable and has room for a commit's WAL frames, and a write of a
// 16 KiB row (and of its deletion) is committed, WAL append and sync included. On PostgreSQL: the
// server takes a write transaction (not a standby) and can find new pages in the database's
// default tablespace (not a full disk). Either leaves no row and no change the read cache sees,
// and costs one short write transaction.
func (s *Store) Writable(ctx context.Context) error {
	if err := s.engine.Room(); err != nil {
		return fmt.Errorf("store: write probe: %w: %w", ErrUnavailable, err)
	}
	statements, commit := s.engine.WriteProbe(probeRow)
	err := s.pool.Tx(ctx, func(q *sqltx.Tx) error {
		for _, st := range statements {
			if _, err := q.Exec(ctx, st.SQL, st.Args...); err != nil {
				return err
			}
		}
		if !commit {
			return errProbed
		}
		return nil
	})
	if err != nil && !errors.Is(err, errProbed) {
		return fmt.Errorf("store: write probe: %w", err)
	}
	return nil
}
