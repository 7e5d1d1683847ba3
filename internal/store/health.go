package store

import (
	"context"
	"fmt"
)

// Writable checks that a write commits: on SQLite that the path still names the file that was
// opened and that the file takes a write (not read-only, disk not full); on PostgreSQL that the
// server is not read-only (a standby). The write rewrites one migrations row as it is: one page
// or one row version, whatever the state.
func (s *Store) Writable(ctx context.Context) error {
	err := s.tx(ctx, func(q querier) error {
		_, err := q.exec(ctx, `UPDATE schema_migrations SET version = version WHERE version = (SELECT max(version) FROM schema_migrations)`)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: write probe: %w", err)
	}
	return nil
}
