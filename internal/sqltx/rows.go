package sqltx

import (
	"context"
	"database/sql"
	"strings"
)

// Import is an engine's bulk load under way in a transaction (the store's Engine.BeginImport):
// its settings, under which the import's rows do not move the read cache's generation as they go
// in. A value, not a function, so that what it holds is in its type (see the store's
// TestTransactionBodiesReachNoPool).
type Import interface {
	// Moved moves the read cache's generation now, and takes its lock.
	Moved() error
	// End gives the settings back, whatever the outcome.
	End()
}

// Statement is a statement and the arguments it is run with, for a list of statements whose
// arguments differ from one to the next (an engine's write probe).
type Statement struct {
	SQL  string
	Args []any
}

// Rows is *sql.Rows whose errors are classified.
type Rows struct {
	*sql.Rows
	errs Classifier
}

// Classifier marks the errors of a database that cannot answer now as unavailable, and passes
// anything else through (DB.Classify).
type Classifier interface {
	Classify(err error) error
}

// NewRows wraps r, its errors classified by errs.
func NewRows(r *sql.Rows, errs Classifier) *Rows { return &Rows{Rows: r, errs: errs} }

func (r *Rows) Scan(dest ...any) error { return r.errs.Classify(r.Rows.Scan(dest...)) }
func (r *Rows) Err() error             { return r.errs.Classify(r.Rows.Err()) }

// RowReader runs a read of one row and scans it: a transaction, or the pool (which runs the read
// again on a lost connection).
type RowReader interface {
	ReadRow(ctx context.Context, query string, args, dest []any) error
}

// Row is a read of one row, run when it is scanned (callers scan at once), its error classified.
type Row struct {
	r     RowReader
	ctx   context.Context
	query string
	args  []any
}

// NewRow is the read of query's one row by r.
func NewRow(ctx context.Context, r RowReader, query string, args []any) Row {
	return Row{r: r, ctx: ctx, query: query, args: args}
}

func (r Row) Scan(dest ...any) error { return r.r.ReadRow(r.ctx, r.query, r.args, dest) }

// Scanner reads one row's columns: *sql.Row, *sql.Rows, Row, *Rows.
type Scanner interface{ Scan(dest ...any) error }

// ValueRows is the VALUES list of n rows of width placeholders: (?, ?), (?, ?), …
func ValueRows(width, n int) string {
	row := "(" + strings.Repeat("?, ", width-1) + "?)"
	return strings.Repeat(row+", ", n-1) + row
}
