package store

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
)

// SAM action logs come by the million, so their import differs from the other records'. Rows go
// in multi-row batches. An entity whose logs all arrive in this import gets its final positions
// computed here, in list order, so that its rows append to the table (keyed by entity and
// position) and no renumbering pass runs. The ids go to sam_action_log_ids in id order, sorted on
// the other core while the rows go in: an append as well, where inserting them in the file's
// order would be a random insert per log (most of the import's time, before migration 0003).

// samEntityTables are the tables a SAM action log may belong to.
var samEntityTables = []string{"leads", "merchants", "deployment_orders", "line_items", "equipment"}

// errSAMTaken says that a SAM action log's id was already taken. Import names the log once the
// transaction has rolled back (samTaken): inside it, the ids of the file are all stored already.
var errSAMTaken = errors.New("store: import: a SAM action log's id is taken")

// samActionLogs inserts the logs entity by entity, then their ids. An entity with no logs in the
// database yet (the usual case) gets its positions computed here, in list order, and its rows
// inserted in that order. An entity that already has logs gets its new rows at positions below
// zero, out of the way of the stored ones, and is renumbered whole at the end of the import
// (renumberSAMLogs), since new logs may interleave with stored ones.
func (im *importer) samActionLogs() error {
	logs := im.ds.SAMActionLogs
	im.renumber = map[domain.ID]int{}
	if len(logs) == 0 {
		return nil
	}
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
	ids := make([][16]byte, len(logs))
	for i := range logs {
		var ok bool
		if ids[i], ok = parseUUID(logs[i].ID); !ok {
			return dataset.Errorf(at("samActionLogs", i)+".id", "not a uuid: %q", string(logs[i].ID))
		}
	}
	sorted := make(chan [][16]byte, 1) // buffered: an early return leaves no goroutine behind
	go func() {
		s := slices.Clone(ids)
		slices.SortFunc(s, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
		sorted <- s
	}()

	rows, err := im.newRowBatch(`sam_action_logs (entity_id, pos, id, action, action_date, sam_id)`, 6, samBatchRows)
	if err != nil {
		return err
	}
	defer rows.close()
	for _, e := range entities {
		idx := byEntity[e]
		key := uuidArg(e)
		stored, err := im.hasSAMLogs(e, key)
		if err != nil {
			return err
		}
		if stored {
			im.renumber[e] = len(idx)
			for k, i := range idx {
				if err := rows.add(samRow(key, -int64(k+1), ids[i][:], &logs[i])...); err != nil {
					return err
				}
			}
			continue
		}
		for rank, i := range inListOrder(logs, idx) {
			if err := rows.add(samRow(key, int64(rank+1), ids[i][:], &logs[i])...); err != nil {
				return err
			}
		}
	}
	if err := rows.flush(); err != nil {
		return err
	}

	keys, err := im.newRowBatch(`sam_action_log_ids (id)`, 1, samIDBatchRows)
	if err != nil {
		return err
	}
	defer keys.close()
	s := <-sorted
	for k := range s {
		if err := keys.add(s[k][:]); err != nil {
			return err
		}
	}
	if err := keys.flush(); err != nil {
		return err
	}
	im.count += len(logs)
	return nil
}

func samRow(entity []byte, pos int64, id []byte, l *domain.SAMActionLog) []any {
	return []any{entity, pos, id, l.Action, micros(l.ActionDate), l.SamID}
}

// inListOrder sorts the indexes of one entity's logs into list order: action date descending
// (at the stored precision, microseconds), then id descending. Ids are canonical lower-case
// uuids, whose byte order is the order of their 16 bytes.
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

func (im *importer) hasSAMLogs(entity domain.ID, key []byte) (bool, error) {
	var n int
	err := im.q.row(im.ctx, `SELECT count(*) FROM (SELECT 1 FROM sam_action_logs WHERE entity_id = ? LIMIT 1) AS t`, key).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("store: import: SAM logs of %s: %w", entity, err)
	}
	return n > 0, nil
}

// samBatchRows is how many logs one INSERT carries, and samIDBatchRows how many ids: far fewer
// statements for a million logs, and far under either engine's limit on parameters.
const (
	samBatchRows   = 64
	samIDBatchRows = 256
)

// rowBatch gathers rows into multi-row inserts that skip a row whose key is taken (a failed
// statement would abort a PostgreSQL transaction); a skipped row fails the import with
// errSAMTaken.
type rowBatch struct {
	im          *importer
	into        string // table (columns)
	width, rows int    // values per row, rows per full statement
	full        *sql.Stmt
	n           int
	args        []any
}

func (im *importer) newRowBatch(into string, width, rows int) (*rowBatch, error) {
	b := &rowBatch{im: im, into: into, width: width, rows: rows, args: make([]any, 0, width*rows)}
	if len(im.ds.SAMActionLogs) >= rows {
		st, err := im.q.prepare(im.ctx, b.insertOf(rows))
		if err != nil {
			return nil, fmt.Errorf("store: import: prepare: %w", err)
		}
		b.full = st
	}
	return b, nil
}

// insertOf is an insert of n rows that skips a row whose key is taken.
func (b *rowBatch) insertOf(n int) string {
	e := b.im.q.e
	row := "(" + strings.Repeat("?, ", b.width-1) + "?)"
	var sb strings.Builder
	sb.WriteString(cmp.Or(e.insertOrSkip, "INSERT INTO"))
	sb.WriteString(" " + b.into + " VALUES ")
	for r := range n {
		if r > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(row)
	}
	if e.insertOrSkip == "" {
		sb.WriteString(" ON CONFLICT DO NOTHING")
	}
	return sb.String()
}

func (b *rowBatch) close() {
	if b.full != nil {
		b.full.Close()
	}
}

func (b *rowBatch) add(values ...any) error {
	b.args = append(b.args, values...)
	if b.n++; b.n == b.rows {
		return b.flush()
	}
	return nil
}

func (b *rowBatch) flush() error {
	if b.n == 0 {
		return nil
	}
	var res sql.Result
	var err error
	if b.n == b.rows && b.full != nil {
		res, err = b.full.ExecContext(b.im.ctx, b.args...)
	} else {
		res, err = b.im.q.exec(b.im.ctx, b.insertOf(b.n), b.args...)
	}
	if err != nil {
		return fmt.Errorf("store: import SAM action logs: %w", err)
	}
	inserted, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: import SAM action logs: %w", err)
	}
	if inserted != int64(b.n) {
		return errSAMTaken
	}
	b.n, b.args = 0, b.args[:0]
	return nil
}

// samIDChunk is how many ids samTaken looks up per query.
const samIDChunk = 256

// samTaken names the log whose id was taken, after the import has rolled back: the first log of
// the file, in file order, whose id is stored already or repeats an earlier log's.
func (s *Store) samTaken(ctx context.Context, logs []domain.SAMActionLog) error {
	query := `SELECT id FROM sam_action_log_ids WHERE id IN (?` + strings.Repeat(", ?", samIDChunk-1) + `)`
	seen := make(map[[16]byte]bool, len(logs))
	args := make([]any, samIDChunk)
	for start := 0; start < len(logs); start += samIDChunk {
		end := min(start+samIDChunk, len(logs))
		for k := range args {
			args[k] = uuidArg(logs[min(start+k, end-1)].ID) // the last chunk repeats its last id
		}
		stored, err := s.storedSAMIDs(ctx, query, args)
		if err != nil {
			return err
		}
		for i := start; i < end; i++ {
			u, _ := parseUUID(logs[i].ID)
			if seen[u] || stored[u] {
				return dataset.Errorf(at("samActionLogs", i)+".id", "duplicate id %s: already in the database", logs[i].ID)
			}
			seen[u] = true
		}
	}
	return dataset.Errorf("samActionLogs", "conflicts with a record already in the database or the file")
}

func (s *Store) storedSAMIDs(ctx context.Context, query string, args []any) (map[[16]byte]bool, error) {
	rows, err := s.q().query(ctx, query, args...)
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
		stored[[16]byte(id)] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: import: SAM log ids: %w", err)
	}
	return stored, nil
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

// renumberSAMLogs gives every log of the entities an import added logs to (n of them each, at
// positions -1 to -n) its position in list order, inside the import's transaction, so readers see
// old positions or new ones, never a mix. A position is part of the key, which no two logs may
// share even for a moment: the logs that move go first below every position in use (their rank
// plus n, negated), then to their rank. Only logs whose position changes are written.
func renumberSAMLogs(ctx context.Context, q querier, entities map[domain.ID]int) error {
	for id, n := range entities {
		key := uuidArg(id)
		_, err := q.exec(ctx, `UPDATE sam_action_logs SET pos = -r.rn - ?
FROM (SELECT pos AS old, row_number() OVER (ORDER BY action_date DESC, id DESC) AS rn FROM sam_action_logs WHERE entity_id = ?) AS r
WHERE sam_action_logs.entity_id = ? AND sam_action_logs.pos = r.old AND r.old <> r.rn`, n, key, key)
		if err == nil {
			_, err = q.exec(ctx, `UPDATE sam_action_logs SET pos = -pos - ? WHERE entity_id = ? AND pos < 0`, n, key)
		}
		if err != nil {
			return fmt.Errorf("store: renumber SAM logs of %s: %w", id, err)
		}
	}
	return nil
}
