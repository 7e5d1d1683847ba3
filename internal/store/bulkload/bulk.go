// Package bulkload is the SQL of moving records in bulk: the dataset file's import (inserts,
// batches, upserts, deletes, PostgreSQL's COPY, the SAM logs and their buckets), the export's
// reads, and the copy of a whole database into an empty one (transfer.go, dbcopy.go). It knows
// tables and rows, never the file: which records go where, and what a problem is called in the
// file, is the caller's (internal/dataset). Table and column names come from the caller's own
// constants, never from input; a copy's columns come from the two databases' catalogs, and only
// plain lower-case names that both have are taken.
//
// It runs inside a transaction the store opens (store.Load, store.Dump; a copy, in one of each)
// and is given only that transaction (*sqltx.Tx), the engine's few differences it needs (Engine,
// Copier), and the audit chain (Chain): it cannot reach the store's pool, cache or audit writer.
package bulkload

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// Engine is what an import needs of the database engine.
type Engine interface {
	// InsertOrSkip spells an INSERT that skips rows whose unique key is taken: head before the
	// table, tail after the values.
	InsertOrSkip() (head, tail string)
	// IsUniqueViolation tells a unique or primary-key violation by its error code.
	IsUniqueViolation(err error) bool
}

// Chain is the store's audit chain, as an import writes to it (see store.auditChain).
type Chain interface {
	// Append adds events at the end of the chain, numbered and linked as any event written now.
	Append(ctx context.Context, q *sqltx.Tx, events []domain.AuditEvent) error
	// Adopt makes the events inserted with their place in the chain (an export's) this
	// database's chain, which must then verify.
	Adopt(ctx context.Context, q *sqltx.Tx) error
}

// Bulk is an import's transaction.
type Bulk struct {
	ctx    context.Context
	q      *sqltx.Tx
	engine Engine
	chain  Chain
	// Progress, if set, is told how many SAM action logs each batch of AddSAMLogs put in: a
	// million logs are one call.
	Progress func(rows int)
	// copier is the engine when it copies rows in bulk (copy.go) on the connection q was begun
	// on; failed is a copy that failed after its caller had returned.
	copier Copier
	failed error
}

// Run runs fn on the import whose transaction q is: a failed copy that fn's calls left behind
// fails it too. An engine that is a Copier copies on q's connection, where q was begun on one
// held for it (sqltx.Tx.Conn).
func Run(ctx context.Context, q *sqltx.Tx, engine Engine, chain Chain, fn func(b *Bulk) error) error {
	b := &Bulk{ctx: ctx, q: q, engine: engine, chain: chain}
	if q.Conn() != nil {
		b.copier, _ = engine.(Copier)
	}
	err := fn(b)
	if b.failed != nil {
		return b.failed
	}
	return err
}

// Exists reports whether table holds a row whose id is id.
func (b *Bulk) Exists(table string, id domain.ID) (bool, error) {
	var n int
	if err := b.q.QueryRow(b.ctx, `SELECT count(*) FROM `+table+` WHERE id = ?`, id).Scan(&n); err != nil {
		return false, fmt.Errorf("store: import: %w", err)
	}
	return n > 0, nil
}

// SharedID finds an id that two of tables (each with an id column) hold, and the two: found
// false when none does. It reads every id of the tables.
func (b *Bulk) SharedID(tables []string) (id domain.ID, in [2]string, found bool, err error) {
	var union []string
	for _, t := range tables {
		union = append(union, `SELECT id, '`+t+`' AS t FROM `+t)
	}
	q := `SELECT id, min(t), max(t) FROM (` + strings.Join(union, ` UNION ALL `) + `) AS ids GROUP BY id HAVING count(*) > 1 ORDER BY id LIMIT 1`
	err = b.q.QueryRow(b.ctx, q).Scan(&id, &in[0], &in[1])
	if errors.Is(err, sql.ErrNoRows) {
		return "", in, false, nil
	}
	if err != nil {
		return "", in, false, fmt.Errorf("store: import: ids shared by two kinds: %w", err)
	}
	return id, in, true, nil
}

// Uses is a query of the uses line items make of the records of one kind that belong to the
// partner of the line items that use them, a row a use: ref (the record's id), partner_id (its
// order's merchant's partner), line_item, via (the equipment through which the line item uses
// it, empty when directly), order_id, merchant_id.
type Uses string

// lineItemPartners is each line item with the order, merchant and partner it belongs to.
const lineItemPartners = `SELECT li.id AS line_item, li.equipment_id, li.varsheet_id, o.id AS order_id, m.id AS merchant_id, m.partner_id
FROM line_items li JOIN deployment_orders o ON o.id = li.order_id JOIN merchants m ON m.id = o.merchant_id`

const (
	// EquipmentUses: equipment is used by the line items it is on.
	EquipmentUses Uses = `SELECT equipment_id AS ref, partner_id, line_item, '' AS via, order_id, merchant_id
FROM (` + lineItemPartners + `) AS li WHERE equipment_id IS NOT NULL`
	// VarsheetUses: a VAR sheet is used by the line items that name it, and by those whose
	// equipment names it.
	VarsheetUses Uses = `SELECT varsheet_id AS ref, partner_id, line_item, '' AS via, order_id, merchant_id
FROM (` + lineItemPartners + `) AS li WHERE varsheet_id IS NOT NULL
UNION ALL SELECT e.varsheet_id, li.partner_id, li.line_item, e.id, li.order_id, li.merchant_id
FROM equipment e JOIN (` + lineItemPartners + `) AS li ON li.equipment_id = e.id WHERE e.varsheet_id IS NOT NULL`
)

// PartnerUse is a use of a record by a line item, and what makes the line item its partner's.
type PartnerUse struct {
	Partner, LineItem domain.ID
	// Via is the equipment through which the line item uses the record ("" when directly).
	Via             domain.ID
	Order, Merchant domain.ID
}

// SharedAcrossPartners finds the first record (by id) that line items of two partners use, and
// a use of it by each partner, the lower partner id's first: found false when none is. It reads
// every line item.
func (b *Bulk) SharedAcrossPartners(uses Uses) (ref domain.ID, by [2]PartnerUse, found bool, err error) {
	q := `WITH uses AS (` + string(uses) + `),
shared AS (SELECT ref, min(partner_id) AS a, max(partner_id) AS b FROM uses GROUP BY ref
  HAVING min(partner_id) <> max(partner_id) ORDER BY ref LIMIT 1)
SELECT u.ref, u.partner_id, u.line_item, u.via, u.order_id, u.merchant_id FROM shared s JOIN uses u ON u.ref = s.ref
WHERE u.partner_id = s.a OR u.partner_id = s.b ORDER BY u.partner_id, u.line_item, u.via`
	rows, err := b.q.Query(b.ctx, q)
	if err != nil {
		return "", by, false, fmt.Errorf("store: import: records shared by two partners: %w", err)
	}
	defer rows.Close()
	n := 0
	for n < 2 && rows.Next() {
		var u PartnerUse
		if err := rows.Scan(&ref, &u.Partner, &u.LineItem, &u.Via, &u.Order, &u.Merchant); err != nil {
			return "", by, false, fmt.Errorf("store: import: records shared by two partners: %w", err)
		}
		if n == 0 || u.Partner != by[0].Partner {
			by[n] = u
			n++
		}
	}
	if err := rows.Err(); err != nil {
		return "", by, false, fmt.Errorf("store: import: records shared by two partners: %w", err)
	}
	return ref, by, n == 2, nil
}

// Inserter inserts rows into one table, skipping a row that a unique constraint refuses rather
// than failing on it: a failed statement aborts a PostgreSQL transaction, and the query that tells
// a duplicate id from another conflict could not run after it.
type Inserter struct {
	ctx   context.Context
	stmt  sqltx.Stmt
	table string
}

// Inserter prepares the insert of rows of columns (a comma-separated list) into table.
func (b *Bulk) Inserter(table, columns string) (*Inserter, error) {
	n := strings.Count(columns, ",") + 1
	query := `INSERT INTO ` + table + ` (` + columns + `) VALUES (?` + strings.Repeat(", ?", n-1) + `) ON CONFLICT DO NOTHING`
	stmt, err := b.q.Prepare(b.ctx, query)
	if err != nil {
		return nil, fmt.Errorf("store: import: prepare %s: %w", table, err)
	}
	return &Inserter{ctx: b.ctx, stmt: stmt, table: table}, nil
}

// Insert inserts one row, its values in the columns' order, and reports whether it went in.
func (in *Inserter) Insert(args ...any) (bool, error) {
	res, err := in.stmt.ExecContext(in.ctx, args...)
	if err != nil {
		return false, fmt.Errorf("store: import %s: %w", in.table, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: import %s: %w", in.table, err)
	}
	return n > 0, nil
}

// Close releases the prepared insert.
func (in *Inserter) Close() { in.stmt.Close() }

// Snapshot is a read-only view of the whole database at one moment (an export).
type Snapshot struct {
	ctx context.Context
	q   *sqltx.Tx
}

// NewSnapshot is the export's view through q, a read-only transaction that sees one state.
func NewSnapshot(ctx context.Context, q *sqltx.Tx) *Snapshot { return &Snapshot{ctx: ctx, q: q} }

// Scanner reads one row's columns.
type Scanner = sqltx.Scanner

// ReadAll reads every row of table, columns (a comma-separated list) ordered by orderBy, handing
// each row to scan.
func (sn *Snapshot) ReadAll(table, columns, orderBy string, scan func(Scanner) error) error {
	rows, err := sn.q.Query(sn.ctx, `SELECT `+columns+` FROM `+table+` ORDER BY `+orderBy)
	if err != nil {
		return fmt.Errorf("%s: %w", table, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return fmt.Errorf("%s: %w", table, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: %w", table, err)
	}
	return nil
}

// AuditTrailLength is the newest audit event's sequence number: 0 when there is none.
func (b *Bulk) AuditTrailLength() (int64, error) {
	var n int64
	if err := b.q.QueryRow(b.ctx, `SELECT COALESCE(MAX(seq), 0) FROM audit_events`).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: import: %w", err)
	}
	return n, nil
}

// AppendAudit adds events at the end of the audit chain, numbered and linked as any event written
// now.
func (b *Bulk) AppendAudit(events []domain.AuditEvent) error {
	return b.chain.Append(b.ctx, b.q, events)
}

// AdoptAuditChain makes the audit events just inserted with their place in the chain (an export's,
// into a database that had none) this database's chain: the genesis names the file's events
// before its first link as the ones from before the chain, and the whole chain must then verify
// under the ring, or the import fails naming the first bad event.
func (b *Bulk) AdoptAuditChain() error {
	return b.chain.Adopt(b.ctx, b.q)
}
