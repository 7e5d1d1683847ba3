package bulkload

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"backoffice/internal/column"
	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// SAM action logs come by the million, so their import differs from the other records'. Rows go
// in multi-row batches, each entity's in key order (action_date, id): the table is keyed by
// (entity_id, action_date, id), so a fresh entity's logs, or logs newer than its stored ones,
// append to it, and a late log is one insert in its place. The counts that make pages cheap,
// sam_log_buckets (see samBuckets), are adjusted per entity, for the buckets from the one the
// oldest new log falls in onwards. The ids go to sam_action_log_ids in id order: an append as
// well, where inserting them in the file's order would be a random insert per log (most of the
// import's time, before migration 0003).

// ErrSAMLogTaken says that a SAM action log's id was already taken, by a stored log or by another
// log of the same import. Inside the import the ids of its logs are all stored already, so which
// one it was is asked after the rollback (StoredSAMLogIDs).
var ErrSAMLogTaken = errors.New("store: import: a SAM action log's id is taken")

// samPlan is what the import of SAM logs needs that no database query tells.
type samPlan struct {
	entities   []domain.ID // in the order of their first log
	entityArgs []any       // each entity as a query argument, boxed once
	entityOf   []int       // each log's entity, an index of entities
	order      [][]int     // the indexes of each entity's logs, oldest first (list order reversed)
	ids        [][16]byte  // each log's id as its 16 bytes
}

// planSAMLogs groups the logs by entity, orders each entity's logs, and reads each id's bytes.
func planSAMLogs(logs []domain.SAMActionLog) (*samPlan, error) {
	p := &samPlan{ids: make([][16]byte, len(logs)), entityOf: make([]int, len(logs))}
	byEntity := map[domain.ID]int{}
	for i := range logs {
		e := logs[i].EntityID
		k, seen := byEntity[e]
		if !seen {
			k = len(p.entities)
			byEntity[e] = k
			p.entities, p.order = append(p.entities, e), append(p.order, nil)
			p.entityArgs = append(p.entityArgs, column.UUIDArg(e))
		}
		p.entityOf[i] = k
		p.order[k] = append(p.order[k], i)
		var ok bool
		if p.ids[i], ok = logs[i].ID.Bytes(); !ok {
			return nil, fmt.Errorf("store: import: SAM action log %d: id %q is no uuid", i, logs[i].ID)
		}
	}
	for k := range p.order {
		p.order[k] = oldestFirst(logs, p.ids, p.order[k])
	}
	return p, nil
}

// byID is the indexes of the logs in the order of their ids' bytes. The ids are sorted with their
// index beside them, not through it: a compare through the index reaches into the logs, and
// costs more than the compare itself.
func (p *samPlan) byID() []int {
	type ref struct {
		id [16]byte
		i  int
	}
	refs := make([]ref, len(p.ids))
	for i := range refs {
		refs[i] = ref{p.ids[i], i}
	}
	slices.SortFunc(refs, func(a, b ref) int { return bytes.Compare(a.id[:], b.id[:]) })
	idx := make([]int, len(refs))
	for k := range refs {
		idx[k] = refs[k].i
	}
	return idx
}

// keys are the keys of the entity k's logs, oldest first.
func (p *samPlan) keys(logs []domain.SAMActionLog, k int) []samKey {
	keys := make([]samKey, len(p.order[k]))
	for r, i := range p.order[k] {
		keys[r] = samKey{column.Micros(logs[i].ActionDate), p.ids[i][:]}
	}
	return keys
}

// AddSAMLogs inserts logs, entity by entity, then their ids, and counts them into their
// entities' buckets. It may be called many times in one import, with logs in any order: each
// call costs what its logs and the buckets from its entities' oldest new log onwards cost, never
// a rewrite of a stored entity.
//
// Every log's id must be a uuid, and every entity must exist: the caller checks both, to name
// the log at fault. A log whose id is taken (stored already, or given twice) fails the import with
// ErrSAMLogTaken; StoredSAMLogIDs tells which, once the import has rolled back.
func (b *Bulk) AddSAMLogs(logs []domain.SAMActionLog) error {
	if len(logs) == 0 {
		return nil
	}
	plan, err := planSAMLogs(logs)
	if err != nil {
		return err
	}
	// The buckets are planned before any row goes in: a bucket that splits reads its stored keys.
	buckets := make([]*samBuckets, len(plan.entities))
	for k, e := range plan.entities {
		if buckets[k], err = b.addToBuckets(e, plan.keys(logs, k)); err != nil {
			return err
		}
	}

	// A row refused by the key is a log given twice within its entity and date: a taken id.
	rows, err := b.newRowBatch(`sam_action_logs (entity_id, action_date, id, action, sam_id)`, 5, samBatchRows, len(logs), ErrSAMLogTaken)
	if err != nil {
		return err
	}
	rows.progress = b.Progress
	defer rows.close()
	args := make([]any, 0, 5*samBatchRows)
	for k, idx := range plan.order {
		entity := plan.entityArgs[k]
		for _, i := range idx {
			l := &logs[i]
			args = append(args, entity, column.Micros(l.ActionDate), plan.ids[i][:], l.Action, l.SamID)
			if len(args) == cap(args) {
				if err := rows.run(args); err != nil {
					return err
				}
				args = args[:0]
			}
		}
	}
	if err := rows.run(args); err != nil {
		return err
	}

	// Each id with where its log is (entity and date, with the id its row's key), so that a
	// replaced or deleted log is found by its id alone.
	keys, err := b.newRowBatch(`sam_action_log_ids (id, entity_id, action_date)`, 3, samIDBatchRows, len(logs), ErrSAMLogTaken)
	if err != nil {
		return err
	}
	defer keys.close()
	args = make([]any, 0, 3*samIDBatchRows)
	for _, i := range plan.byID() {
		if args = append(args, plan.ids[i][:], plan.entityArgs[plan.entityOf[i]], column.Micros(logs[i].ActionDate)); len(args) == cap(args) {
			if err := keys.run(args); err != nil {
				return err
			}
			args = args[:0]
		}
	}
	if err := keys.run(args); err != nil {
		return err
	}
	for _, bs := range buckets {
		if err := bs.write(b); err != nil {
			return err
		}
	}
	return nil
}

// oldestFirst sorts the indexes of one entity's logs into key order: list order reversed,
// action date ascending (at the stored precision, microseconds), then id ascending, by the ids'
// 16 bytes as the database compares them.
func oldestFirst(logs []domain.SAMActionLog, ids [][16]byte, idx []int) []int {
	type key struct {
		us int64
		id [16]byte
		i  int
	}
	keys := make([]key, len(idx))
	for k, i := range idx {
		keys[k] = key{column.Micros(logs[i].ActionDate), ids[i], i}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(a.us, b.us); c != 0 {
			return c
		}
		return bytes.Compare(a.id[:], b.id[:])
	})
	out := make([]int, len(keys))
	for k := range keys {
		out[k] = keys[k].i
	}
	return out
}

// samBatchRows is how many logs one INSERT carries, and samIDBatchRows how many ids: far fewer
// statements for a million logs, and far under either engine's limit on parameters.
const (
	samBatchRows   = 64
	samIDBatchRows = 256
)

// samIDChunk is how many ids StoredSAMLogIDs looks up per query.
const samIDChunk = 256

// Reader runs a read: the store's pool, or a transaction.
type Reader interface {
	Query(ctx context.Context, query string, args ...any) (*sqltx.Rows, error)
}

// StoredSAMLogIDs is the package's StoredSAMLogIDs inside the import's transaction.
func (b *Bulk) StoredSAMLogIDs(ids []domain.ID) ([]bool, error) {
	return StoredSAMLogIDs(b.ctx, b.q, ids)
}

// StoredSAMLogIDs says, for each of ids, whether a stored SAM action log has it, read by q. An
// id that is no uuid is not stored.
func StoredSAMLogIDs(ctx context.Context, q Reader, ids []domain.ID) ([]bool, error) {
	query := `SELECT id FROM sam_action_log_ids WHERE id IN (?` + strings.Repeat(", ?", samIDChunk-1) + `)`
	out := make([]bool, len(ids))
	args := make([]any, samIDChunk)
	for start := 0; start < len(ids); start += samIDChunk {
		end := min(start+samIDChunk, len(ids))
		for k := range args {
			args[k] = column.UUIDArg(ids[min(start+k, end-1)]) // the last chunk repeats its last id
		}
		stored, err := storedSAMIDs(ctx, q, query, args)
		if err != nil {
			return nil, err
		}
		for i := start; i < end; i++ {
			u, ok := ids[i].Bytes()
			out[i] = ok && stored[u]
		}
	}
	return out, nil
}

func storedSAMIDs(ctx context.Context, q Reader, query string, args []any) (map[[16]byte]bool, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: import: SAM log ids: %w", err)
	}
	defer rows.Close()
	stored := map[[16]byte]bool{}
	for rows.Next() {
		var id sql.RawBytes
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: import: SAM log ids: %w", err)
		}
		if len(id) != 16 {
			return nil, fmt.Errorf("store: import: SAM log ids: a stored id of %d bytes", len(id))
		}
		stored[[16]byte(id)] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: import: SAM log ids: %w", err)
	}
	return stored, nil
}

// SAMActionLogs reads every SAM action log, entity by entity, newest first.
func (sn *Snapshot) SAMActionLogs() ([]domain.SAMActionLog, error) {
	var logs []domain.SAMActionLog
	err := sn.ReadAll("sam_action_logs", "id, entity_id, action, action_date, sam_id", "entity_id, action_date DESC, id DESC", func(r Scanner) error {
		var l domain.SAMActionLog
		var id, entity sql.RawBytes // read before the next row
		var date int64
		if err := r.Scan(&id, &entity, &l.Action, &date, &l.SamID); err != nil {
			return err
		}
		var err error
		if l.ID, err = column.IDOfUUID(id); err != nil {
			return err
		}
		if l.EntityID, err = column.IDOfUUID(entity); err != nil {
			return err
		}
		l.ActionDate = column.FromMicros(date)
		logs = append(logs, l)
		return nil
	})
	return logs, err
}
