package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
)

// SAM action logs come by the million, so their import differs from the other records': rows go
// in multi-row batches, and an entity whose logs all arrive in this import gets its final
// positions computed here, sparing the renumbering pass (the costliest step at that size).

// samEntityTables are the tables a SAM action log may belong to.
var samEntityTables = []string{"leads", "merchants", "deployment_orders", "line_items", "equipment"}

// samActionLogs inserts the logs entity by entity. An entity with no logs in the database yet
// (the usual case) gets its positions computed here, in list order, and its rows inserted in that
// order, in multi-row batches: no renumbering pass, and the (entity_id, pos) index grows at its
// end. An entity that already has logs gets its new rows at position 0 and is renumbered whole
// at the end of the import (renumberSAMLogs), since new logs may interleave with stored ones.
func (im *importer) samActionLogs() error {
	logs := im.ds.SAMActionLogs
	im.renumber = map[domain.ID]bool{}
	byEntity := map[domain.ID][]int{}
	var entities []domain.ID
	for i := range logs {
		e := logs[i].EntityID
		if _, seen := byEntity[e]; !seen {
			if err := im.samEntity(at("samActionLogs", i)+".entityId", e); err != nil {
				return err
			}
			entities = append(entities, e)
		}
		byEntity[e] = append(byEntity[e], i)
	}
	b, err := im.newSAMBatch()
	if err != nil {
		return err
	}
	defer b.close()
	for _, e := range entities {
		idx := byEntity[e]
		stored, err := im.hasSAMLogs(e)
		if err != nil {
			return err
		}
		if stored {
			im.renumber[e] = true
			for _, i := range idx {
				if err := b.add(i, 0); err != nil {
					return err
				}
			}
			continue
		}
		for rank, i := range inListOrder(logs, idx) {
			if err := b.add(i, int64(rank+1)); err != nil {
				return err
			}
		}
	}
	return b.flush()
}

// inListOrder sorts the indexes of one entity's logs into list order: action date descending
// (at the stored precision, microseconds), then id descending. Ids are canonical lower-case
// uuids, whose byte order is the order of any collation.
func inListOrder(logs []domain.SAMActionLog, idx []int) []int {
	type key struct {
		us int64
		id domain.ID
		i  int
	}
	keys := make([]key, len(idx))
	for k, i := range idx {
		keys[k] = key{micros(logs[i].ActionDate), logs[i].ID, i}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(b.us, a.us); c != 0 {
			return c
		}
		return strings.Compare(string(b.id), string(a.id))
	})
	out := make([]int, len(keys))
	for k := range keys {
		out[k] = keys[k].i
	}
	return out
}

func (im *importer) hasSAMLogs(entity domain.ID) (bool, error) {
	var n int
	err := im.q.row(im.ctx, `SELECT count(*) FROM (SELECT 1 FROM sam_action_logs WHERE entity_id = ? LIMIT 1) AS t`, entity).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("store: import: SAM logs of %s: %w", entity, err)
	}
	return n > 0, nil
}

// samBatchRows is how many logs one INSERT carries: far fewer statements for a million logs,
// and far under either engine's limit on parameters (6 per row).
const samBatchRows = 64

const samColumns = ` sam_action_logs (id, entity_id, action, action_date, sam_id, pos) VALUES `

// samBatch gathers logs into multi-row inserts that skip a row whose id is taken (a failed
// statement would abort a PostgreSQL transaction), and names that row.
type samBatch struct {
	im   *importer
	full *sql.Stmt // samBatchRows rows
	idx  []int
	pos  []int64
	args []any
}

func (im *importer) newSAMBatch() (*samBatch, error) {
	b := &samBatch{im: im}
	if len(im.ds.SAMActionLogs) >= samBatchRows {
		st, err := im.q.prepare(im.ctx, samInsertOf(im.q.e, samBatchRows))
		if err != nil {
			return nil, fmt.Errorf("store: import: prepare: %w", err)
		}
		b.full = st
	}
	return b, nil
}

// samInsertOf is an insert of rows logs that skips a row whose id is taken.
func samInsertOf(e *engine, rows int) string {
	var sb strings.Builder
	sb.WriteString(cmp.Or(e.insertOrSkip, "INSERT INTO"))
	sb.WriteString(samColumns)
	for r := range rows {
		if r > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("(?, ?, ?, ?, ?, ?)")
	}
	if e.insertOrSkip == "" {
		sb.WriteString(" ON CONFLICT DO NOTHING")
	}
	return sb.String()
}

func (b *samBatch) close() {
	if b.full != nil {
		b.full.Close()
	}
}

func (b *samBatch) add(i int, pos int64) error {
	r := &b.im.ds.SAMActionLogs[i]
	b.idx, b.pos = append(b.idx, i), append(b.pos, pos)
	b.args = append(b.args, r.ID, r.EntityID, r.Action, micros(r.ActionDate), r.SamID, pos)
	if len(b.idx) == samBatchRows {
		return b.flush()
	}
	return nil
}

func (b *samBatch) flush() error {
	n := len(b.idx)
	if n == 0 {
		return nil
	}
	var res sql.Result
	var err error
	if n == samBatchRows && b.full != nil {
		res, err = b.full.ExecContext(b.im.ctx, b.args...)
	} else {
		res, err = b.im.q.exec(b.im.ctx, samInsertOf(b.im.q.e, n), b.args...)
	}
	if err != nil {
		return fmt.Errorf("store: import %s: %w", at("samActionLogs", b.idx[0]), err)
	}
	inserted, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: import %s: %w", at("samActionLogs", b.idx[0]), err)
	}
	if inserted != int64(n) {
		return b.conflict()
	}
	b.im.count += n
	b.idx, b.pos, b.args = b.idx[:0], b.pos[:0], b.args[:0]
	return nil
}

// conflict names the log of the batch whose id was already taken. Its stored row is not the one
// this batch would have written: another entity's log, or a stored log of the same entity (a
// position of 1 or more, where this import wrote 0), or a position this import did not compute.
func (b *samBatch) conflict() error {
	logs := b.im.ds.SAMActionLogs
	for k, i := range b.idx {
		var entity domain.ID
		var pos int64
		err := b.im.q.row(b.im.ctx, `SELECT entity_id, pos FROM sam_action_logs WHERE id = ?`, logs[i].ID).Scan(&entity, &pos)
		if err != nil {
			return fmt.Errorf("store: import %s: %w", at("samActionLogs", i), err)
		}
		if entity != logs[i].EntityID || pos != b.pos[k] {
			return dataset.Errorf(at("samActionLogs", i)+".id", "duplicate id %s: already in the database", logs[i].ID)
		}
	}
	return dataset.Errorf(at("samActionLogs", b.idx[0]), "conflicts with a record already in the database or the file")
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
