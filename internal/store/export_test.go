package store

import (
	"context"
	"fmt"
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

// WithoutReadCache turns the store's read cache off, for benchmarks of the reads themselves.
func WithoutReadCache(s *Store) { s.cache = nil }

// SAMBuckets checks the entity's buckets of SAM log counts against its logs, and returns how
// many there are: the first starts before every log, each holds n logs (the logs from its start
// to the next one's), no more than samBucketMax; below is the count of the logs before it; no
// bucket but the first is empty. It returns the buckets' sizes, oldest first.
func SAMBuckets(ctx context.Context, s *Store, entity domain.ID) ([]int64, error) {
	key := uuidArg(entity)
	rows, err := s.q().query(ctx, `SELECT start_date, start_id, n, below FROM sam_log_buckets WHERE entity_id = ? ORDER BY start_date, start_id`, key)
	if err != nil {
		return nil, err
	}
	var list []samBucket
	for rows.Next() {
		var bk samBucket
		if err := rows.Scan(&bk.start.date, &bk.start.id, &bk.n, &bk.below); err != nil {
			rows.Close()
			return nil, err
		}
		list = append(list, bk)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var total int64
	if err := s.q().row(ctx, `SELECT count(*) FROM sam_action_logs WHERE entity_id = ?`, key).Scan(&total); err != nil {
		return nil, err
	}
	if len(list) == 0 {
		if total != 0 {
			return nil, fmt.Errorf("%d logs and no bucket", total)
		}
		return nil, nil
	}
	if list[0].start.date != samBeforeAll.date || len(list[0].start.id) != 0 {
		return nil, fmt.Errorf("the first bucket starts at %v", list[0].start)
	}
	var below int64
	sizes := make([]int64, len(list))
	for j, bk := range list {
		sizes[j] = bk.n
		end := samAfterAll
		if j+1 < len(list) {
			end = list[j+1].start
		}
		var n int64
		if err := s.q().row(ctx, `SELECT count(*) FROM sam_action_logs WHERE entity_id = ? AND (action_date, id) >= (?, ?) AND (action_date, id) < (?, ?)`,
			key, bk.start.date, append([]byte{}, bk.start.id...), end.date, end.id).Scan(&n); err != nil {
			return nil, err
		}
		switch {
		case n != bk.n:
			return nil, fmt.Errorf("bucket %d holds %d logs, counts %d", j, n, bk.n)
		case bk.below != below:
			return nil, fmt.Errorf("bucket %d: below %d, want %d", j, bk.below, below)
		case n > samBucketMax:
			return nil, fmt.Errorf("bucket %d holds %d logs, more than %d", j, n, samBucketMax)
		case n == 0 && j > 0:
			return nil, fmt.Errorf("bucket %d is empty", j)
		}
		below += n
	}
	if below != total {
		return nil, fmt.Errorf("the buckets count %d logs of %d", below, total)
	}
	return sizes, nil
}

// The sizes of buckets: the target a cut makes, the most one holds, and under which one joins the
// next when both fit in the most.
const SAMBucketTarget, SAMBucketMax, SAMBucketMin = samBucketTarget, samBucketMax, samBucketMin

// AddSAMLogIDs puts ids into sam_action_log_ids by the row batch AddSAMLogs uses, in full batches
// only (no short batch ends it), and reports whether the batch copied them (PostgreSQL's COPY).
func (b *Bulk) AddSAMLogIDs(ids [][16]byte) (copied bool, err error) {
	rows, err := b.newRowBatch(`sam_action_log_ids (id, entity_id, action_date)`, 3, samIDBatchRows, len(ids), ErrSAMLogTaken)
	if err != nil {
		return false, err
	}
	defer rows.close()
	for start := 0; start+samIDBatchRows <= len(ids); start += samIDBatchRows {
		args := make([]any, 0, 3*samIDBatchRows)
		for _, id := range ids[start : start+samIDBatchRows] {
			args = append(args, id[:], id[:], int64(0)) // where the log is matters not here
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

// ChainLink is the link of e after prev under e's key: what someone holding that key could write.
func ChainLink(sig ChainSigner, prev []byte, e domain.AuditEvent) ([]byte, error) {
	return chainLink(sig, prev, e)
}
