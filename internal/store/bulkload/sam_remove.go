package bulkload

import (
	"fmt"
	"slices"
	"strings"

	"backoffice/internal/column"
	"backoffice/internal/domain"
)

// RemoveSAMLog removes a stored SAM action log, from both of its tables, reporting whether there
// was one, and counts it out of its entity's buckets.
func (b *Bulk) RemoveSAMLog(id domain.ID) (bool, error) {
	n, err := b.RemoveSAMLogs([]domain.ID{id})
	return n == 1, err
}

// RemoveSAMLogs removes the stored SAM action logs of ids, saying how many there were. Each id's
// row in sam_action_log_ids says where its log is, so the logs go by their key, a probe each,
// whatever the size of their entity; the ids go by the chunk. The buckets of each entity are
// adjusted once at the end. A replaced log goes back in through AddSAMLogs, as a new one.
func (b *Bulk) RemoveSAMLogs(ids []domain.ID) (int, error) {
	gone := samRemoved{}
	removed := 0
	for start := 0; start < len(ids); start += samIDChunk {
		n, err := b.removeSAMLogs(ids[start:min(start+samIDChunk, len(ids))], gone)
		if err != nil {
			return 0, err
		}
		removed += n
	}
	if err := b.countOut(gone); err != nil {
		return 0, err
	}
	return removed, nil
}

// samRemoved holds the keys of the removed logs, by entity.
type samRemoved map[domain.ID][]samKey

// countOut counts the removed logs out of their entities' buckets.
func (b *Bulk) countOut(gone samRemoved) error {
	for e, keys := range gone {
		slices.SortFunc(keys, samKey.compare)
		bs, err := b.removeFromBuckets(e, keys)
		if err != nil {
			return err
		}
		if err := bs.write(b); err != nil {
			return err
		}
	}
	return nil
}

// samRemoveBatch is how many logs one DELETE removes by their keys.
const samRemoveBatch = 64

// removeSAMLogs removes the stored logs of ids (a chunk), noting their keys in gone, and says how
// many there were.
func (b *Bulk) removeSAMLogs(ids []domain.ID, gone samRemoved) (int, error) {
	found, err := b.whereSAMLogs(ids)
	if err != nil {
		return 0, err
	}
	for start := 0; start < len(found); start += samRemoveBatch {
		batch := found[start:min(start+samRemoveBatch, len(found))]
		where := make([]string, len(batch))
		args := make([]any, 0, 3*len(batch))
		for k, l := range batch {
			where[k] = `(entity_id = ? AND action_date = ? AND id = ?)`
			args = append(args, l.entity, l.key.date, l.key.id)
		}
		if err := b.deleteAll(`DELETE FROM sam_action_logs WHERE `+strings.Join(where, " OR "), args, len(batch)); err != nil {
			return 0, err
		}
		ids := make([]any, len(batch))
		for k, l := range batch {
			ids[k] = l.key.id
		}
		if err := b.deleteAll(`DELETE FROM sam_action_log_ids WHERE id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`, ids, len(ids)); err != nil {
			return 0, err
		}
	}
	for _, l := range found {
		e, err := column.IDOfUUID(l.entity)
		if err != nil {
			return 0, fmt.Errorf("store: import: remove SAM logs: %w", err)
		}
		gone[e] = append(gone[e], l.key)
	}
	return len(found), nil
}

// samLogPlace is where a stored log is: its entity and its key there.
type samLogPlace struct {
	entity []byte
	key    samKey
}

// whereSAMLogs reads where the stored logs of ids are; an id of no stored log has no place.
func (b *Bulk) whereSAMLogs(ids []domain.ID) ([]samLogPlace, error) {
	args := make([]any, len(ids))
	for k, id := range ids {
		args[k] = column.UUIDArg(id)
	}
	rows, err := b.q.Query(b.ctx, `SELECT id, entity_id, action_date FROM sam_action_log_ids WHERE id IN (?`+
		strings.Repeat(", ?", len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: import: remove SAM logs: %w", err)
	}
	defer rows.Close()
	var found []samLogPlace
	for rows.Next() {
		var l samLogPlace
		if err := rows.Scan(&l.key.id, &l.entity, &l.key.date); err != nil {
			return nil, fmt.Errorf("store: import: remove SAM logs: %w", err)
		}
		found = append(found, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: import: remove SAM logs: %w", err)
	}
	return found, nil
}

// deleteAll runs a DELETE that must remove want rows: the two tables of SAM logs disagreeing is a
// fault of the store, not of the file.
func (b *Bulk) deleteAll(query string, args []any, want int) error {
	res, err := b.q.Exec(b.ctx, query, args...)
	if err != nil {
		return fmt.Errorf("store: import: remove SAM logs: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: import: remove SAM logs: %w", err)
	}
	if n != int64(want) {
		return fmt.Errorf("store: import: remove SAM logs: %d rows removed of %d: the ids and the logs disagree", n, want)
	}
	return nil
}
