package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
)

// SAM action logs come by the million, so their import differs from the other records' in two
// ways: rows go in batches, and an entity whose logs all arrive in this import gets their final
// positions computed here, sparing the renumbering pass (the costliest step at that size).
// Entities that had logs before are renumbered after the inserts.

// samEntityTables are the tables a SAM action log may belong to.
var samEntityTables = []string{"leads", "merchants", "deployment_orders", "line_items", "equipment"}

// samBatchSize is how many logs one INSERT carries: a statement per row costs a round trip per
// row on PostgreSQL. 500 rows of 6 values stay far below both engines' limits on bound values
// (65,535 and 32,766).
const samBatchSize = 500

func (im *importer) samActionLogs() error {
	logs := im.ds.SAMActionLogs
	pos, err := im.samPositions(logs)
	if err != nil {
		return err
	}
	for from := 0; from < len(logs); from += samBatchSize {
		to := min(from+samBatchSize, len(logs))
		if err := im.samBatch(from, logs[from:to], pos[from:to]); err != nil {
			return err
		}
	}
	return nil
}

// samPositions checks each log's entity and returns the final position of each log of an entity
// that has none in the database yet (0 for the others, which are renumbered later).
func (im *importer) samPositions(logs []domain.SAMActionLog) ([]int64, error) {
	im.renumber = map[domain.ID]bool{}
	fresh := map[domain.ID][]int{} // entity without logs in the database -> its logs in the file
	for i, r := range logs {
		if group, ok := fresh[r.EntityID]; ok {
			fresh[r.EntityID] = append(group, i)
			continue
		}
		if im.renumber[r.EntityID] {
			continue
		}
		if err := im.samEntity(at("samActionLogs", i)+".entityId", r.EntityID); err != nil {
			return nil, err
		}
		had, err := im.hasSAMLogs(r.EntityID)
		if err != nil {
			return nil, err
		}
		if had {
			im.renumber[r.EntityID] = true
		} else {
			fresh[r.EntityID] = []int{i}
		}
	}
	pos := make([]int64, len(logs))
	for _, group := range fresh {
		slices.SortFunc(group, func(a, b int) int { return listOrder(logs[a], logs[b]) })
		for rank, i := range group {
			pos[i] = int64(rank + 1)
		}
	}
	return pos, nil
}

// listOrder is the order of an entity's logs in the list, and so of their positions: actionDate
// descending, then id descending. renumberSAMLogs says the same in SQL.
func listOrder(a, b domain.SAMActionLog) int {
	return cmp.Or(b.ActionDate.Compare(a.ActionDate), cmp.Compare(b.ID, a.ID))
}

func (im *importer) samEntity(path string, id domain.ID) error {
	for _, table := range samEntityTables {
		if im.inFile[table][id] {
			return nil
		}
		ok, err := im.exists(table, id)
		if err != nil || ok {
			return err
		}
	}
	return dataset.Errorf(path, "no lead, merchant, deployment order, line item or equipment with this id")
}

func (im *importer) hasSAMLogs(entity domain.ID) (bool, error) {
	var n int64
	if err := im.q.row(im.ctx, `SELECT COALESCE(MAX(pos), 0) FROM sam_action_logs WHERE entity_id = ?`, entity).Scan(&n); err != nil {
		return false, fmt.Errorf("store: import: SAM logs of %s: %w", entity, err)
	}
	return n > 0, nil
}

// samBatch inserts one batch. Its ids are looked up first, so that a log already in the database
// is named by its path like any other duplicate.
func (im *importer) samBatch(from int, batch []domain.SAMActionLog, pos []int64) error {
	if err := im.samExisting(from, batch); err != nil {
		return err
	}
	args := make([]any, 0, 6*len(batch))
	for i, r := range batch {
		args = append(args, r.ID, r.EntityID, r.Action, micros(r.ActionDate), r.SamID, pos[i])
	}
	_, err := im.q.exec(im.ctx, `INSERT INTO sam_action_logs (id, entity_id, action, action_date, sam_id, pos) VALUES `+
		repeatGroup(len(batch), "(?, ?, ?, ?, ?, ?)"), args...)
	if err != nil && im.q.e.isUniqueViolation(err) {
		return samTwice(from, batch) // nothing in the database had these ids
	}
	if err != nil {
		return fmt.Errorf("store: import samActionLogs[%d:%d]: %w", from, from+len(batch), err)
	}
	im.count += len(batch)
	return nil
}

// samExisting fails naming the first log of the batch whose id is already in the database.
func (im *importer) samExisting(from int, batch []domain.SAMActionLog) error {
	ids := make([]any, len(batch))
	for i, r := range batch {
		ids[i] = r.ID
	}
	taken := map[domain.ID]bool{}
	rows, err := im.q.query(im.ctx, `SELECT id FROM sam_action_logs WHERE id IN (`+repeatGroup(len(batch), "?")+`)`, ids...)
	if err != nil {
		return fmt.Errorf("store: import samActionLogs[%d:%d]: %w", from, from+len(batch), err)
	}
	defer rows.Close()
	for rows.Next() {
		var id domain.ID
		if err := rows.Scan(&id); err != nil {
			return fmt.Errorf("store: import samActionLogs[%d:%d]: %w", from, from+len(batch), err)
		}
		taken[id] = true
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: import samActionLogs[%d:%d]: %w", from, from+len(batch), err)
	}
	for i, r := range batch {
		if taken[r.ID] {
			return dataset.Errorf(at("samActionLogs", from+i)+".id", "duplicate id %s: already in the database", r.ID)
		}
	}
	return nil
}

// samTwice names the log of a batch whose id came earlier in the same batch.
func samTwice(from int, batch []domain.SAMActionLog) error {
	seen := map[domain.ID]bool{}
	for i, r := range batch {
		if seen[r.ID] {
			return dataset.Errorf(at("samActionLogs", from+i)+".id", "duplicate id %s", r.ID)
		}
		seen[r.ID] = true
	}
	return dataset.Errorf(fmt.Sprintf("samActionLogs[%d:%d]", from, from+len(batch)), "conflicts with a record already in the database or the file")
}

// repeatGroup repeats a placeholder group n times, comma-separated.
func repeatGroup(n int, group string) string {
	return strings.TrimSuffix(strings.Repeat(group+", ", n), ", ")
}

// renumberSAMLogs recomputes the list position of every log of the entities an import added logs
// to, inside the import's transaction, so readers see old positions or new ones, never a mix.
// Only rows whose position changes are written.
func renumberSAMLogs(ctx context.Context, q querier, entities map[domain.ID]bool) error {
	for id := range entities {
		_, err := q.exec(ctx, `UPDATE sam_action_logs SET pos = r.rn
FROM (SELECT id, row_number() OVER (ORDER BY action_date DESC, id DESC) AS rn FROM sam_action_logs WHERE entity_id = ?) AS r
WHERE sam_action_logs.id = r.id AND sam_action_logs.pos <> r.rn`, id)
		if err != nil {
			return fmt.Errorf("store: renumber SAM logs of %s: %w", id, err)
		}
	}
	return nil
}
