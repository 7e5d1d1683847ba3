package store

import (
	"context"
	"errors"
	"fmt"

	"backoffice/internal/store/sqltx"
)

// probeRow is what the write probe inserts: larger than a page (SQLite's are 4 KiB), so that
// SQLite must find four new pages for it, as an insert does once the pages it has are full. Zeros,
// which PostgreSQL compresses to a few bytes, and which SQLite stores as they are.
var probeRow = make([]byte, 16<<10)

// errProbed ends the write probe's transaction: it rolls back what the probe wrote.
var errProbed = errors.New("store: write probe done")

// Writable checks that the database takes an insert now: on SQLite that the path still names the
// file that was opened, that the file takes a write lock (not read-only) and that the database can
// grow by the pages an insert may need (free pages, or room under the disk's or max_page_count's
// limit); on PostgreSQL that the server takes an insert (not a standby, not out of space). The
// insert is rolled back: nothing is committed, so neither the file nor the read cache changes, and
// it costs one short write transaction. (Rewriting a row that exists is no test: on a full
// database it fits in its page, while every insert fails.)
func (s *Store) Writable(ctx context.Context) error {
	err := s.tx(ctx, func(q *sqltx.Tx) error {
		if _, err := q.Exec(ctx, `INSERT INTO readiness_probe (filler) VALUES (?)`, probeRow); err != nil {
			return err
		}
		return errProbed
	})
	if err != nil && !errors.Is(err, errProbed) {
		return fmt.Errorf("store: write probe: %w", err)
	}
	return nil
}
