package bulkload

import (
	"database/sql"
	"fmt"

	"backoffice/internal/sqltx"
)

// rowBatch runs multi-row inserts that skip a row whose key is taken (a failed statement would
// abort a PostgreSQL transaction); a skipped row fails the import with the batch's error (the SAM
// logs' is ErrSAMLogTaken). A full batch runs as one prepared statement.
type rowBatch struct {
	b           *Bulk
	into        string // table (columns)
	width, rows int    // values per row, rows per full batch
	full        sqltx.Stmt
	// skipped is the error when rows were skipped for a taken key.
	skipped error
	// progress, if set, is told how many rows each batch put in.
	progress func(rows int)
	// copy, when the engine copies rows in bulk, takes the rows instead (copy.go).
	copy *copyRows
}

// newRowBatch prepares the full batch when total rows fill one at least.
func (b *Bulk) newRowBatch(into string, width, rows, total int, skipped error) (*rowBatch, error) {
	rb := &rowBatch{b: b, into: into, width: width, rows: rows, skipped: skipped}
	if rb.copy = b.copyOf(into, width, skipped); rb.copy == nil && total >= rows {
		st, err := b.q.Prepare(b.ctx, rb.insertOf(rows))
		if err != nil {
			return nil, fmt.Errorf("store: import: prepare: %w", err)
		}
		rb.full = st
	}
	return rb, nil
}

// insertOf is an insert of n rows that skips a row whose key is taken.
func (b *rowBatch) insertOf(n int) string {
	head, tail := b.b.engine.InsertOrSkip()
	return head + " " + b.into + " VALUES " + sqltx.ValueRows(b.width, n) + tail
}

func (b *rowBatch) close() {
	if b.copy != nil {
		b.copy.close()
	}
	if b.full != nil {
		b.full.Close()
	}
}

// run inserts the rows whose values args holds, row after row.
func (b *rowBatch) run(args []any) error {
	if b.copy != nil {
		err := b.copy.put(args, b.rows)
		if n := len(args) / b.width; err == nil && n > 0 && b.progress != nil {
			b.progress(n) // handed to the copy: the progress of a long one moves as smoothly
		}
		return err
	}
	n := len(args) / b.width
	if n == 0 {
		return nil
	}
	var res sql.Result
	var err error
	if n == b.rows && b.full != nil {
		res, err = b.full.ExecContext(b.b.ctx, args...)
	} else {
		res, err = b.b.q.Exec(b.b.ctx, b.insertOf(n), args...)
	}
	if err != nil {
		return fmt.Errorf("store: import SAM action logs: %w", err)
	}
	inserted, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: import SAM action logs: %w", err)
	}
	if inserted != int64(n) {
		return b.skipped
	}
	if b.progress != nil {
		b.progress(n)
	}
	return nil
}
