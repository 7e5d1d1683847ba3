package bulkload

import (
	"fmt"
	"strings"

	"backoffice/internal/sqltx"
)

// Batcher inserts rows into one table insertBatchRows at a time, in one statement each, skipping a
// row that a unique constraint refuses as Inserter does. On PostgreSQL every statement is a round
// trip to the server, and the import's leads, principals and line items are tens of thousands of
// rows: one statement a row was most of a big import's time there. A skipped row is told by the
// ids the statement returns, and its caller's onSkip says what that means, once the batch has
// run: rows go in, or fail, in order.
type Batcher struct {
	b             *Bulk
	table, head   string
	width         int
	args          []any
	onSkip        []func() error
	full          sqltx.Stmt // the statement of a full batch, prepared on first use
	returnsColumn string
	// bytes is about how many bytes of values are queued: a batch of documents' contents goes
	// before it reaches insertBatchBytes, however few rows it holds.
	bytes int
}

// insertBatchRows is how many rows one statement carries at most (a VAR sheet's 20-odd columns
// make 2,000-odd parameters: far under either engine's limit), and insertBatchBytes about how many
// bytes of values.
const (
	insertBatchRows  = 100
	insertBatchBytes = 4 << 20
)

// Batcher prepares batched inserts of rows of columns (a comma-separated list, the record's id
// first) into table.
func (b *Bulk) Batcher(table, columns string) *Batcher {
	first, _, _ := strings.Cut(columns, ",")
	return &Batcher{b: b, table: table, head: `INSERT INTO ` + table + ` (` + columns + `) VALUES `,
		width: strings.Count(columns, ",") + 1, returnsColumn: strings.TrimSpace(first)}
}

// Add queues a row, its values in the columns' order; onSkip (nil: nothing) runs if a unique
// constraint refuses it, and its error is the batch's. A full batch runs at once.
func (in *Batcher) Add(onSkip func() error, args ...any) error {
	in.args = append(in.args, args...)
	in.onSkip = append(in.onSkip, onSkip)
	for _, v := range args {
		switch v := v.(type) {
		case string:
			in.bytes += len(v)
		case []byte:
			in.bytes += len(v)
		default:
			in.bytes += 8
		}
	}
	if len(in.onSkip) == insertBatchRows || in.bytes >= insertBatchBytes {
		return in.Flush()
	}
	return nil
}

// Flush inserts the rows queued, then runs onSkip of the first one refused, if any.
func (in *Batcher) Flush() error {
	n := len(in.onSkip)
	if n == 0 {
		return nil
	}
	args, onSkip := in.args, in.onSkip
	in.args, in.onSkip, in.bytes = in.args[:0], in.onSkip[:0], 0
	rows, err := in.run(n, args)
	if err != nil {
		return fmt.Errorf("store: import %s: %w", in.table, err)
	}
	inserted := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("store: import %s: %w", in.table, err)
		}
		inserted[id] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: import %s: %w", in.table, err)
	}
	for r := range n {
		if onSkip[r] != nil && !inserted[fmt.Sprint(args[r*in.width])] {
			return onSkip[r]()
		}
	}
	return nil
}

// run runs the insert of n rows, returning the first column of the rows that went in.
func (in *Batcher) run(n int, args []any) (*sqltx.Rows, error) {
	if n < insertBatchRows {
		return in.b.q.Query(in.b.ctx, in.insertOf(n), args...)
	}
	if in.full == nil {
		st, err := in.b.q.Prepare(in.b.ctx, in.insertOf(n))
		if err != nil {
			return nil, err
		}
		in.full = st
	}
	r, err := in.full.QueryContext(in.b.ctx, args...)
	if err != nil {
		return nil, in.b.q.Classify(err)
	}
	return in.b.q.ClassifiedRows(r), nil
}

func (in *Batcher) insertOf(n int) string {
	return in.head + sqltx.ValueRows(in.width, n) + " ON CONFLICT DO NOTHING RETURNING " + in.returnsColumn
}

// Close releases the prepared statement; rows still queued are dropped (call Flush first).
func (in *Batcher) Close() {
	if in.full != nil {
		in.full.Close()
	}
}
