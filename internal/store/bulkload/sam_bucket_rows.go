package bulkload

import (
	"fmt"
	"strings"
)

// samBucketBatch is how many buckets one statement writes.
const samBucketBatch = 128

// write stores what changed. A bucket whose n changed, a new one and a deleted one are written
// row by row (in multi-row statements); a stretch of untouched buckets whose below all moved by
// the same count (all the newer buckets, after one late log) is one UPDATE of a range of the
// key, which PostgreSQL runs without a round trip per bucket.
func (bs *samBuckets) write(b *Bulk) error {
	rows := samBucketRows{b: b, entity: bs.entity}
	var run []*samBucket // untouched buckets in a row, their below moved by the same count
	flushRun := func() error {
		if len(run) == 0 {
			return nil
		}
		first, last := run[0], run[len(run)-1]
		run = run[:0]
		if d := first.below - first.was[1]; d != 0 {
			if _, err := b.q.Exec(b.ctx, `UPDATE sam_log_buckets SET below = below + ?
WHERE entity_id = ? AND (start_date, start_id) >= (?, ?) AND (start_date, start_id) <= (?, ?)`,
				d, bs.entity, first.start.date, first.start.id, last.start.date, last.start.id); err != nil {
				return fmt.Errorf("store: import: SAM log buckets: %w", err)
			}
		}
		return nil
	}
	for _, bk := range bs.list {
		untouched := bk.stored && !bk.gone && bk.n == bk.was[0]
		if untouched && (len(run) == 0 || bk.below-bk.was[1] == run[0].below-run[0].was[1]) {
			run = append(run, bk)
			continue
		}
		if err := flushRun(); err != nil {
			return err
		}
		if untouched {
			run = append(run, bk)
			continue
		}
		if err := rows.add(bk); err != nil {
			return err
		}
	}
	if err := flushRun(); err != nil {
		return err
	}
	return rows.flush()
}

// samBucketRows writes buckets one row each, batched: the deletes at once, the others by
// samBucketBatch in an insert that replaces the stored row's counts.
type samBucketRows struct {
	b      *Bulk
	entity []byte
	args   []any
}

func (r *samBucketRows) add(bk *samBucket) error {
	switch {
	case bk.gone && bk.stored:
		if _, err := r.b.q.Exec(r.b.ctx, `DELETE FROM sam_log_buckets WHERE entity_id = ? AND start_date = ? AND start_id = ?`,
			r.entity, bk.start.date, bk.start.id); err != nil {
			return fmt.Errorf("store: import: SAM log buckets: %w", err)
		}
	case bk.gone:
	default:
		if r.args = append(r.args, r.entity, bk.start.date, bk.start.id, bk.n, bk.below); len(r.args) == 5*samBucketBatch {
			return r.flush()
		}
	}
	return nil
}

func (r *samBucketRows) flush() error {
	if len(r.args) == 0 {
		return nil
	}
	values := "(?, ?, ?, ?, ?)" + strings.Repeat(", (?, ?, ?, ?, ?)", len(r.args)/5-1)
	_, err := r.b.q.Exec(r.b.ctx, `INSERT INTO sam_log_buckets (entity_id, start_date, start_id, n, below) VALUES `+values+`
ON CONFLICT (entity_id, start_date, start_id) DO UPDATE SET n = excluded.n, below = excluded.below`, r.args...)
	r.args = r.args[:0]
	if err != nil {
		return fmt.Errorf("store: import: SAM log buckets: %w", err)
	}
	return nil
}
