package bulkload

import (
	"bytes"
	"cmp"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"backoffice/internal/column"
	"backoffice/internal/domain"
)

// The buckets of SAM action logs (sam_log_buckets, migration 0006) count each entity's logs in
// stretches of consecutive ones, so that a page finds where it starts in one probe (see
// samPageQuery) while a late log changes no more than the counts: its bucket's n, and the below
// of every newer bucket of its entity.
//
// A bucket is named by its start: it holds the entity's logs from its start up to the next
// bucket's. The first bucket starts at samBeforeAll, so every log falls in one. A bucket that
// grows past samBucketMax logs is cut into buckets of about samBucketTarget; one that shrinks
// under samBucketMin takes in the next bucket when the two fit in samBucketMax; an emptied bucket
// other than the first is dropped. below is the number of the entity's logs older than the
// bucket: the sum of the n of the buckets before it.

// The sizes of buckets. A page skips up to a bucket's worth of logs, so smaller buckets make deep
// pages cheaper, and a late log moves one row per newer bucket, so bigger ones make late logs
// cheaper. At 256 a deep page costs about what page 1 does, at the price of more bucket rows for a
// late log to move; larger buckets made deep pages several times dearer (docs/performance.md,
// "Why 256").
// Migration 0006 cuts buckets of 256 too; any sizes a database holds stay correct.
const (
	samBucketTarget = 256
	samBucketMax    = 2 * samBucketTarget
	samBucketMin    = samBucketTarget / 4
)

// The sizes of buckets, for tests: the target a cut makes, the most one holds, and under which
// one joins the next when both fit in the most.
const SAMBucketTarget, SAMBucketMax, SAMBucketMin = samBucketTarget, samBucketMax, samBucketMin

// samKey is where a log sorts in its entity, oldest first: action date (microseconds), then id.
type samKey struct {
	date int64
	id   []byte
}

func (a samKey) compare(b samKey) int {
	if c := cmp.Compare(a.date, b.date); c != 0 {
		return c
	}
	return bytes.Compare(a.id, b.id)
}

// samBeforeAll is the first bucket's start, before the key of every log: the smallest date and an
// empty id. The id is an empty slice, not nil, which a driver would bind as NULL.
var samBeforeAll = samKey{date: math.MinInt64, id: []byte{}}

// samAfterAll is past the key of every log.
var samAfterAll = samKey{date: math.MaxInt64, id: column.AfterEveryUUID()}

// samBucket is one row of sam_log_buckets as an import changes it.
type samBucket struct {
	start    samKey
	n, below int64
	// stored says that the row exists (with the values was), gone that it is to be deleted.
	stored, gone bool
	was          [2]int64 // n, below as read
}

// samBuckets are an entity's buckets from the one that holds the oldest log an import adds or
// removes, to the newest.
type samBuckets struct {
	entity []byte
	list   []*samBucket
}

// loadSAMBuckets reads the entity's buckets from the one that holds from onwards, or, for an
// entity with none, gives it its first bucket, empty.
func (b *Bulk) loadSAMBuckets(entity domain.ID, from samKey) (*samBuckets, error) {
	bs := &samBuckets{entity: column.UUIDArg(entity)}
	first := samBeforeAll
	err := b.q.QueryRow(b.ctx, `SELECT start_date, start_id FROM sam_log_buckets
WHERE entity_id = ? AND (start_date, start_id) <= (?, ?) ORDER BY start_date DESC, start_id DESC LIMIT 1`,
		bs.entity, from.date, from.id).Scan(&first.date, &first.id)
	if errors.Is(err, sql.ErrNoRows) {
		bs.list = []*samBucket{{start: samBeforeAll}}
		return bs, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: import: SAM log buckets of %s: %w", entity, err)
	}
	if first.id == nil {
		first.id = []byte{} // SQLite reads an empty blob back as nil
	}
	rows, err := b.q.Query(b.ctx, `SELECT start_date, start_id, n, below FROM sam_log_buckets
WHERE entity_id = ? AND (start_date, start_id) >= (?, ?) ORDER BY start_date, start_id`, bs.entity, first.date, first.id)
	if err != nil {
		return nil, fmt.Errorf("store: import: SAM log buckets of %s: %w", entity, err)
	}
	defer rows.Close()
	for rows.Next() {
		bk := &samBucket{stored: true}
		if err := rows.Scan(&bk.start.date, &bk.start.id, &bk.n, &bk.below); err != nil {
			return nil, fmt.Errorf("store: import: SAM log buckets of %s: %w", entity, err)
		}
		if bk.start.id == nil {
			bk.start.id = []byte{}
		}
		bk.was = [2]int64{bk.n, bk.below}
		bs.list = append(bs.list, bk)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: import: SAM log buckets of %s: %w", entity, err)
	}
	if len(bs.list) == 0 {
		return nil, fmt.Errorf("store: import: SAM log buckets of %s: the bucket found is gone", entity)
	}
	return bs, nil
}

// spans cuts keys (sorted, all at or after the first bucket's start) by bucket: keys[at[j]:at[j+1]]
// fall in bucket j.
func (bs *samBuckets) spans(keys []samKey) []int {
	at := make([]int, len(bs.list)+1)
	k := 0
	for j := range bs.list {
		at[j] = k
		if j+1 < len(bs.list) {
			for k < len(keys) && keys[k].compare(bs.list[j+1].start) < 0 {
				k++
			}
		} else {
			k = len(keys)
		}
	}
	at[len(bs.list)] = k
	return at
}

// addToBuckets counts keys (an entity's new logs, oldest first) into its buckets, cutting those
// that grow too big, before the logs go in: a bucket is cut where its logs, stored and new, say.
func (b *Bulk) addToBuckets(entity domain.ID, keys []samKey) (*samBuckets, error) {
	bs, err := b.loadSAMBuckets(entity, keys[0])
	if err != nil {
		return nil, err
	}
	at := bs.spans(keys)
	base := bs.list[0].below
	var list []*samBucket
	for j, bk := range bs.list {
		mine := keys[at[j]:at[j+1]]
		if bk.n+int64(len(mine)) <= samBucketMax {
			bk.n += int64(len(mine))
			list = append(list, bk)
			continue
		}
		all, err := b.mergeStoredKeys(bs, j, mine)
		if err != nil {
			return nil, err
		}
		list = append(list, cutBucket(bk, all)...)
	}
	bs.list = list
	bs.recount(base)
	return bs, nil
}

// mergeStoredKeys is the keys of bucket j's stored logs and of its new ones, in order.
func (b *Bulk) mergeStoredKeys(bs *samBuckets, j int, mine []samKey) ([]samKey, error) {
	bk := bs.list[j]
	end := samAfterAll
	if j+1 < len(bs.list) {
		end = bs.list[j+1].start
	}
	stored := make([]samKey, 0, bk.n)
	if bk.n > 0 {
		rows, err := b.q.Query(b.ctx, `SELECT action_date, id FROM sam_action_logs
WHERE entity_id = ? AND (action_date, id) >= (?, ?) AND (action_date, id) < (?, ?) ORDER BY action_date, id`,
			bs.entity, bk.start.date, bk.start.id, end.date, end.id)
		if err != nil {
			return nil, fmt.Errorf("store: import: SAM logs to cut a bucket: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var k samKey
			if err := rows.Scan(&k.date, &k.id); err != nil {
				return nil, fmt.Errorf("store: import: SAM logs to cut a bucket: %w", err)
			}
			stored = append(stored, k)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("store: import: SAM logs to cut a bucket: %w", err)
		}
	}
	all := make([]samKey, 0, len(stored)+len(mine))
	i, k := 0, 0
	for i < len(stored) || k < len(mine) {
		if k == len(mine) || i < len(stored) && stored[i].compare(mine[k]) < 0 {
			all, i = append(all, stored[i]), i+1
		} else {
			all, k = append(all, mine[k]), k+1
		}
	}
	return all, nil
}

// cutBucket cuts bk, whose logs' keys are all (in order), into buckets of about samBucketTarget
// logs. The first keeps bk's start (the entity's first bucket stays before every log); each other
// starts at its first log.
func cutBucket(bk *samBucket, all []samKey) []*samBucket {
	pieces := max(len(all)/samBucketTarget, 1)
	out := make([]*samBucket, 0, pieces)
	from := 0
	for p := range pieces {
		to := len(all) * (p + 1) / pieces
		piece := bk
		if p > 0 {
			piece = &samBucket{start: samKey{all[from].date, all[from].id}}
		}
		piece.n = int64(to - from)
		out = append(out, piece)
		from = to
	}
	return out
}

// removeFromBuckets counts keys (an entity's removed logs, oldest first) out of its buckets,
// dropping emptied ones and joining small ones to the next.
func (b *Bulk) removeFromBuckets(entity domain.ID, keys []samKey) (*samBuckets, error) {
	bs, err := b.loadSAMBuckets(entity, keys[0])
	if err != nil {
		return nil, err
	}
	at := bs.spans(keys)
	base := bs.list[0].below
	for j, bk := range bs.list {
		bk.n -= int64(at[j+1] - at[j])
	}
	var list []*samBucket
	for j := 0; j < len(bs.list); j++ {
		bk := bs.list[j]
		if bk.n == 0 && bk.start.compare(samBeforeAll) != 0 {
			bk.gone = true
			list = append(list, bk)
			continue
		}
		for j+1 < len(bs.list) && bk.n < samBucketMin && bk.n+bs.list[j+1].n <= samBucketMax {
			next := bs.list[j+1]
			bk.n += next.n
			next.gone = true
			list = append(list, next)
			j++
		}
		list = append(list, bk)
	}
	bs.list = list
	bs.recount(base)
	return bs, nil
}

// recount sets each bucket's below from base, the first one's: base and the logs of the buckets
// before it.
func (bs *samBuckets) recount(base int64) {
	below := base
	for _, bk := range bs.list {
		if bk.gone {
			continue
		}
		bk.below = below
		below += bk.n
	}
}

// CheckSAMBuckets, inside an import, checks the entity's buckets of SAM log counts against its logs, and returns how
// many there are, for tests and a maintainer's checks: the first starts before every log, each holds n logs (the logs from its start
// to the next one's), no more than samBucketMax; below is the count of the logs before it; no
// bucket but the first is empty. It returns the buckets' sizes, oldest first.
func (b *Bulk) CheckSAMBuckets(entity domain.ID) ([]int64, error) {
	key := column.UUIDArg(entity)
	rows, err := b.q.Query(b.ctx, `SELECT start_date, start_id, n, below FROM sam_log_buckets WHERE entity_id = ? ORDER BY start_date, start_id`, key)
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
	if err := b.q.QueryRow(b.ctx, `SELECT count(*) FROM sam_action_logs WHERE entity_id = ?`, key).Scan(&total); err != nil {
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
		if err := b.q.QueryRow(b.ctx, `SELECT count(*) FROM sam_action_logs WHERE entity_id = ? AND (action_date, id) >= (?, ?) AND (action_date, id) < (?, ?)`,
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
