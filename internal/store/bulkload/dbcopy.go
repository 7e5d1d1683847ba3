package bulkload

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"backoffice/internal/sqltx"
)

// A copy reads each table of the source in its primary key's order, a row at a time through one
// query in the source's snapshot, and writes it to the target in batches bounded in rows and bytes
// (COPY where the engine has it, prepared multi-row INSERTs elsewhere): its memory is a batch,
// whatever the database's size.

// copyBatchBytes is about how many bytes of values one batch of a copy holds at most.
const copyBatchBytes = 8 << 20

// insertCopyParams is about how many values one multi-row INSERT of a copy carries: far under
// either engine's limit on a statement's parameters.
const insertCopyParams = 4096

// readCatalog reads a database's tables and columns through query, the engine's catalog query
// (its rows: table, column, whether it is a boolean, its place in the primary key, 0 when none;
// in the columns' order).
func readCatalog(ctx context.Context, q *sqltx.Tx, query string) (Catalog, error) {
	rows, err := q.Query(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	defer rows.Close()
	cat := Catalog{}
	for rows.Next() {
		var table string
		var c Column
		if err := rows.Scan(&table, &c.Name, &c.Bool, &c.Key); err != nil {
			return nil, fmt.Errorf("catalog: %w", err)
		}
		cat[table] = append(cat[table], c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return cat, nil
}

// Catalog is the catalog of the snapshot's database (see readCatalog).
func (sn *Snapshot) Catalog(query string) (Catalog, error) { return readCatalog(sn.ctx, sn.q, query) }

// Catalog is the catalog of the import's database (see readCatalog).
func (b *Bulk) Catalog(query string) (Catalog, error) { return readCatalog(b.ctx, b.q, query) }

// CopyProgress is told each table a copy has written, with its rows.
type CopyProgress func(table string, rows int64)

// CopyDatabase copies every table of src, whose catalog is from, into b's database, whose catalog
// is to: the tables of copiedTables and the genesis, row for row, every column as stored (a flag
// becomes the target engine's boolean or 0 and 1). It refuses, writing nothing, when a table of
// either database is neither copied nor set aside (notCopied), when a copied table's columns
// differ, and when any copied table of the target holds a row (ErrTargetNotEmpty).
func (b *Bulk) CopyDatabase(src *Snapshot, from, to Catalog, progress CopyProgress) error {
	if err := checkCopyable(from, to); err != nil {
		return err
	}
	for _, t := range copiedTables {
		var n int
		err := b.q.QueryRow(b.ctx, `SELECT count(*) FROM (SELECT 1 FROM `+t+` LIMIT 1) AS r`).Scan(&n)
		if err != nil {
			return fmt.Errorf("target %s: %w", t, err)
		}
		if n > 0 {
			return fmt.Errorf("%w: table %s holds rows; copy into a database that holds none (a new one, migrated or not)", ErrTargetNotEmpty, t)
		}
	}
	if _, err := b.q.Exec(b.ctx, `DELETE FROM `+GenesisTable); err != nil {
		return fmt.Errorf("target %s: %w", GenesisTable, err)
	}
	for _, t := range append(slices.Clone(copiedTables), GenesisTable) {
		n, err := b.copyTable(src, t, from[t], to[t])
		if err != nil {
			return err
		}
		if progress != nil {
			progress(t, n)
		}
	}
	return nil
}

// copyTable copies table's rows from src, read in its primary key's order, and says how many.
func (b *Bulk) copyTable(src *Snapshot, table string, from, to []Column) (int64, error) {
	names := make([]string, len(from))
	var key []Column
	for i, c := range from {
		names[i] = c.Name
		if c.Key > 0 {
			key = append(key, c)
		}
	}
	slices.SortFunc(key, func(a, b Column) int { return a.Key - b.Key })
	query := `SELECT ` + strings.Join(names, ", ") + ` FROM ` + table
	if len(key) > 0 {
		var order []string
		for _, c := range key {
			order = append(order, c.Name)
		}
		query += ` ORDER BY ` + strings.Join(order, ", ")
	}
	// asBool tells, for each column in names' order, whether the target keeps it as a boolean.
	asBool := make([]bool, len(names))
	for i, n := range names {
		for _, c := range to {
			if c.Name == n {
				asBool[i] = c.Bool
			}
		}
	}
	w := b.rowWriter(table, names)
	defer w.close()
	rows, err := src.q.Query(src.ctx, query)
	if err != nil {
		return 0, fmt.Errorf("source %s: %w", table, err)
	}
	defer rows.Close()
	vals := make([]any, len(names))
	ptrs := make([]any, len(names))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var n int64
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, fmt.Errorf("source %s: %w", table, err)
		}
		for i, v := range vals {
			vals[i] = asStored(v, asBool[i])
		}
		if err := w.add(vals); err != nil {
			return n, fmt.Errorf("target %s: %w", table, err)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("source %s: %w", table, err)
	}
	if err := w.flush(); err != nil {
		return n, fmt.Errorf("target %s: %w", table, err)
	}
	return n, b.checkCopied(table, n)
}

// checkCopied reads back, in the target's transaction, how many rows table holds, and refuses
// unless it is the n rows copied into it (the target was empty): a trigger, a rule or another
// writer can drop or add rows behind a write that reported success.
func (b *Bulk) checkCopied(table string, n int64) error {
	var got int64
	if err := b.q.QueryRow(b.ctx, "SELECT count(*) FROM "+table).Scan(&got); err != nil {
		return fmt.Errorf("target %s: read back: %w", table, err)
	}
	if got != n {
		return fmt.Errorf("target %s: %d rows copied, %d read back", table, n, got)
	}
	return nil
}

// asStored is v as the target engine keeps a column that is a boolean there (asBool) or not: a
// SQLite flag (0 or 1) becomes PostgreSQL's boolean and back. An empty BLOB, which the SQLite
// driver reads as a nil []byte (NULL is a nil interface), stays empty instead of becoming NULL.
// Everything else is as read.
func asStored(v any, asBool bool) any {
	switch x := v.(type) {
	case []byte:
		if x == nil {
			return []byte{}
		}
	case int64:
		if asBool {
			return x != 0
		}
	case bool:
		if !asBool {
			if x {
				return int64(1)
			}
			return int64(0)
		}
	}
	return v
}

// rowWriter gathers rows into batches and writes each: by COPY where the import's engine has it.
type rowWriter struct {
	b       *Bulk
	table   string
	columns []string
	values  []any
	rows    int
	bytes   int
	// most is how many rows one batch holds; full is the prepared INSERT of that many (no COPY).
	most int
	full sqltx.Stmt
}

func (b *Bulk) rowWriter(table string, columns []string) *rowWriter {
	w := &rowWriter{b: b, table: table, columns: columns, most: copyBatchRows}
	if b.copier == nil {
		w.most = max(1, insertCopyParams/len(columns))
	}
	return w
}

// add queues a row (its values are copied), writing the batch once it is full.
func (w *rowWriter) add(row []any) error {
	w.values = append(w.values, row...)
	w.rows++
	for _, v := range row {
		switch v := v.(type) {
		case string:
			w.bytes += len(v)
		case []byte:
			w.bytes += len(v)
		default:
			w.bytes += 8
		}
	}
	if w.rows == w.most || w.bytes >= copyBatchBytes {
		return w.flush()
	}
	return nil
}

// flush writes the rows queued.
func (w *rowWriter) flush() error {
	if w.rows == 0 {
		return nil
	}
	err := w.write()
	clear(w.values) // keep none of the rows' values alive
	w.values, w.rows, w.bytes = w.values[:0], 0, 0
	return err
}

// close releases the prepared INSERT, if any.
func (w *rowWriter) close() {
	if w.full != nil {
		w.full.Close()
	}
}

func (w *rowWriter) write() error {
	b := w.b
	if b.copier != nil {
		return b.q.Classify(b.copier.CopyRows(b.ctx, b.q.Conn(), w.table, w.columns, w.values))
	}
	head := `INSERT INTO ` + w.table + ` (` + strings.Join(w.columns, ", ") + `) VALUES `
	if w.rows < w.most {
		_, err := b.q.Exec(b.ctx, head+sqltx.ValueRows(len(w.columns), w.rows), w.values...)
		return err
	}
	if w.full == nil {
		st, err := b.q.Prepare(b.ctx, head+sqltx.ValueRows(len(w.columns), w.rows))
		if err != nil {
			return err
		}
		w.full = st
	}
	_, err := w.full.ExecContext(b.ctx, w.values...)
	return b.q.Classify(err)
}
