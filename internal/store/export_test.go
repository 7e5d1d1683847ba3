package store

import (
	"context"
	"time"

	"backoffice/internal/domain"
)

// Hooks for the external tests of this package.

// MigrateTo applies the migrations up to and including version, as an older release left the
// database.
func MigrateTo(ctx context.Context, s *Store, version string) error {
	return migrateTo(ctx, s.db, s.engine, version)
}

// Clock is the store's clock, for tests that judge credentials at the store's time.
func Clock(s *Store) func() time.Time { return s.now }

// Exec runs shared SQL on the store, outside any operation: tests write rows as an older schema
// held them.
func Exec(ctx context.Context, s *Store, query string, args ...any) error {
	_, err := s.q().exec(ctx, query, args...)
	return err
}

// ListSAMActionLogs is a page of the entity's logs as staff see it: what the service must answer,
// for tests and benchmarks to compare with.
func ListSAMActionLogs(ctx context.Context, s *Store, entity domain.ID, page, size int64) ([]domain.SAMActionLog, int64, error) {
	logs, total, _, err := s.ListVisibleSAMActionLogs(ctx, domain.Scope{}, entity, page, size)
	return logs, total, err
}

// Count counts a table's rows.
func Count(ctx context.Context, s *Store, table string) (n int, err error) {
	err = s.q().row(ctx, `SELECT count(*) FROM `+table).Scan(&n)
	return n, err
}

// CachedReads counts the reads the store's cache holds.
func CachedReads(s *Store) int {
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	return len(s.cache.entries)
}

// AddSAMLogIDs puts ids into sam_action_log_ids by the row batch AddSAMLogs uses, in full batches
// only (no short batch ends it), and reports whether the batch copied them (PostgreSQL's COPY).
func (b *Bulk) AddSAMLogIDs(ids [][16]byte) (copied bool, err error) {
	rows, err := b.newRowBatch(`sam_action_log_ids (id)`, 1, samIDBatchRows, len(ids), ErrSAMLogTaken)
	if err != nil {
		return false, err
	}
	defer rows.close()
	for start := 0; start+samIDBatchRows <= len(ids); start += samIDBatchRows {
		args := make([]any, 0, samIDBatchRows)
		for _, id := range ids[start : start+samIDBatchRows] {
			args = append(args, id[:])
		}
		if err := rows.run(args); err != nil {
			return false, err
		}
	}
	return rows.copy != nil, nil
}

// SAMLogIDBatch is how many ids a full batch of AddSAMLogIDs holds.
const SAMLogIDBatch = samIDBatchRows

// Queued is how many rows the batcher holds, not yet inserted.
func (in *Batcher) Queued() int { return len(in.onSkip) }
