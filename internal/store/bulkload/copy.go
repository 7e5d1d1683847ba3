package bulkload

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Bulk loading by the engine's own protocol: PostgreSQL's COPY takes rows as a stream, with no
// statement to parse, plan or bind per batch, several times faster than multi-row INSERTs. It
// runs on the connection, so an engine that has it (a Copier) gets the import's transaction on a
// connection held for it (store.Load), and the SAM logs' row batches (rowBatch) go through it.

// Copier is an engine that loads rows in bulk on a connection, inside the transaction open on it:
// values holds the rows one after the other, len(columns) values each. A row whose key is taken
// fails the whole copy (and the transaction) with the engine's unique violation.
type Copier interface {
	CopyRows(ctx context.Context, conn *sql.Conn, table string, columns []string, values []any) error
}

// copyBatchRows is how many rows one COPY carries: a few MB of SAM logs.
const copyBatchRows = 16384

// copyRows gathers a rowBatch's rows and copies them in batches of copyBatchRows.
type copyRows struct {
	b       *Bulk
	table   string
	columns []string
	values  []any
	width   int
	skipped error
}

// copyOf is the COPY of a rowBatch's rows (into is "table (col, …)"), nil when the engine has none.
func (b *Bulk) copyOf(into string, width int, skipped error) *copyRows {
	if b.copier == nil {
		return nil
	}
	table, cols, _ := strings.Cut(into, " (")
	columns := strings.Split(strings.TrimSuffix(cols, ")"), ", ")
	return &copyRows{b: b, table: table, columns: columns, width: width, skipped: skipped,
		values: make([]any, 0, width*copyBatchRows)}
}

// put takes the rows of args (whose values it keeps: the caller's slice is reused). A batch of
// fewer than full rows is the last of the rowBatch, and sends every row gathered.
func (c *copyRows) put(args []any, full int) error {
	c.values = append(c.values, args...)
	if len(args) == full*c.width && len(c.values) < c.width*copyBatchRows {
		return nil
	}
	return c.flush()
}

// flush copies the rows gathered.
func (c *copyRows) flush() error {
	if len(c.values) == 0 {
		return nil
	}
	err := c.b.copier.CopyRows(c.b.ctx, c.b.q.Conn(), c.table, c.columns, c.values)
	clear(c.values) // the rows' values are the caller's: keep none alive
	c.values = c.values[:0]
	switch {
	case err != nil && c.b.engine.IsUniqueViolation(err):
		return c.skipped
	case err != nil:
		return fmt.Errorf("store: import %s: %w", c.table, c.b.q.Classify(err))
	}
	return nil
}

// close sends what is left, if any (the rowBatch's user ended without a short batch); a failure
// fails the import, at Load.
func (c *copyRows) close() {
	if err := c.flush(); err != nil && c.b.failed == nil {
		c.b.failed = err
	}
}
