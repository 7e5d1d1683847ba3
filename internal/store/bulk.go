package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"backoffice/internal/domain"
)

// Primitives for moving records in bulk (the dataset file's import and export). They know tables
// and rows, never the file: which records go where, and what a problem is called in the file, is
// the caller's. Table and column names come from the caller's own constants, never from input.

// Bulk is an import's transaction.
type Bulk struct {
	ctx context.Context
	q   querier
	// Progress, if set, is told how many SAM action logs each batch of AddSAMLogs put in: a
	// million logs are one call.
	Progress func(rows int)
	// conn holds the transaction when the engine copies rows in bulk (copy.go); failed is a
	// copy that failed after its caller had returned.
	conn   *sql.Conn
	failed error
}

// Load runs fn in one transaction, committed when fn returns nil: all of it, or nothing. It
// holds the engine's import lock (two imports counting logs into one entity's SAM log buckets at
// once would lose counts) and runs under the engine's bulk-load settings.
func (s *Store) Load(ctx context.Context, fn func(b *Bulk) error) error {
	return s.loadTx(ctx, func(conn *sql.Conn, q querier) error {
		end, err := s.engine.BeginImport(ctx, q.x.(*sql.Tx))
		if err != nil {
			return fmt.Errorf("store: import: %w", s.classify(err))
		}
		defer end()
		b := &Bulk{ctx: ctx, q: q, conn: conn}
		err = fn(b)
		if b.failed != nil {
			return b.failed
		}
		return err
	})
}

// Exists reports whether table holds a row whose id is id.
func (b *Bulk) Exists(table string, id domain.ID) (bool, error) {
	var n int
	if err := b.q.row(b.ctx, `SELECT count(*) FROM `+table+` WHERE id = ?`, id).Scan(&n); err != nil {
		return false, fmt.Errorf("store: import: %w", err)
	}
	return n > 0, nil
}

// Inserter inserts rows into one table, skipping a row that a unique constraint refuses rather
// than failing on it: a failed statement aborts a PostgreSQL transaction, and the query that tells
// a duplicate id from another conflict could not run after it.
type Inserter struct {
	ctx   context.Context
	stmt  stmt
	table string
}

// Inserter prepares the insert of rows of columns (a comma-separated list) into table.
func (b *Bulk) Inserter(table, columns string) (*Inserter, error) {
	n := strings.Count(columns, ",") + 1
	query := `INSERT INTO ` + table + ` (` + columns + `) VALUES (?` + strings.Repeat(", ?", n-1) + `) ON CONFLICT DO NOTHING`
	stmt, err := b.q.prepare(b.ctx, query)
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
	q   querier
}

// Dump runs fn on one consistent snapshot of the database, without blocking writers.
func (s *Store) Dump(ctx context.Context, fn func(sn *Snapshot) error) error {
	return s.snapshot(ctx, func(q querier) error { return fn(&Snapshot{ctx: ctx, q: q}) })
}

// Scanner reads one row's columns.
type Scanner interface{ Scan(dest ...any) error }

// ReadAll reads every row of table, columns (a comma-separated list) ordered by orderBy, handing
// each row to scan.
func (sn *Snapshot) ReadAll(table, columns, orderBy string, scan func(Scanner) error) error {
	rows, err := sn.q.query(sn.ctx, `SELECT `+columns+` FROM `+table+` ORDER BY `+orderBy)
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

// IsEmpty reports whether the database holds no partners, the root of every other record.
func (s *Store) IsEmpty(ctx context.Context) (bool, error) {
	var n int
	if err := s.q().row(ctx, `SELECT count(*) FROM partners`).Scan(&n); err != nil {
		return false, fmt.Errorf("store: %w", err)
	}
	return n == 0, nil
}

// Row mapping: how the store keeps values in columns, for callers that map rows of their own.

// Micros is a time as stored: microseconds since the epoch, UTC.
func Micros(t time.Time) int64 { return micros(t) }

// FromMicros is the time a stored value of Micros names.
func FromMicros(us int64) time.Time { return fromMicros(us) }

// NullMicros and TimePtr map a nullable time.
func NullMicros(t *time.Time) sql.NullInt64 { return nullMicros(t) }
func TimePtr(n sql.NullInt64) *time.Time    { return timePtr(n) }

// NullID and IDPtr map a nullable id.
func NullID(id *domain.ID) sql.NullString { return nullID(id) }
func IDPtr(n sql.NullString) *domain.ID   { return idPtr(n) }

// NullString and StrPtr map a nullable string.
func NullString(s *string) sql.NullString { return nullString(s) }
func StrPtr(n sql.NullString) *string     { return strPtr(n) }

// The columns and mapping of the records the store also reads itself (the push loader), shared so
// that the two cannot disagree.
const (
	InventoryUnitColumns = inventoryUnitCols
	EquipmentColumns     = equipmentCols
	VarsheetColumns      = varsheetCols
	LineItemColumns      = lineItemCols
	ShipmentColumns      = shipmentCols
)

func ScanInventoryUnit(s Scanner) (domain.InventoryUnit, error) { return scanInventoryUnit(s) }
func ScanEquipment(s Scanner) (domain.Equipment, error)         { return scanEquipment(s) }
func ScanVarsheet(s Scanner) (domain.Varsheet, error)           { return scanVarsheet(s) }
func ScanLineItem(s Scanner) (domain.LineItem, error)           { return scanLineItem(s) }

// ScanShipment scans a shipment's columns and then extra, columns the query added after them.
func ScanShipment(s Scanner, extra ...any) (domain.Shipment, error) { return scanShipment(s, extra...) }

// InventoryUnitArgs and the others are a record's values in the order of its columns.
func InventoryUnitArgs(u *domain.InventoryUnit) []any {
	return []any{u.ID, u.DeploymentModelID, u.SerialNumber, u.Condition, u.Status,
		micros(u.ReceivedDate), micros(u.CreatedAt), u.CreatedBy, micros(u.UpdatedAt), u.UpdatedBy}
}

func EquipmentArgs(e *domain.Equipment) []any {
	return []any{e.ID, e.EntityID, e.EntityType, e.DeploymentModelID, nullID(e.InventoryUnitID),
		nullString(e.VendorTerminalID), nullID(e.VarsheetID), e.Status, nullMicros(e.DeployedDate),
		micros(e.CreatedAt), e.CreatedBy, micros(e.UpdatedAt), e.UpdatedBy}
}

func VarsheetArgs(v *domain.Varsheet) []any { return varsheetArgs(v) }

func LineItemArgs(li *domain.LineItem) []any {
	return []any{li.ID, li.OrderID, li.OrderType, li.DeploymentModelID, connectionTypeArg(li.ConnectionType),
		li.Status, nullID(li.InventoryUnitID), nullID(li.EquipmentID), nullID(li.VarsheetID),
		micros(li.CreatedAt), li.CreatedBy, micros(li.UpdatedAt), li.UpdatedBy}
}

func ShipmentArgs(sh *domain.Shipment) []any {
	return []any{sh.ID, sh.Status, nullString(sh.CarrierCode), nullString(sh.TrackingNumber), nullMicros(sh.ShippedDate)}
}

// AuditTrailLength is the newest audit event's sequence number: 0 when there is none.
func (b *Bulk) AuditTrailLength() (int64, error) {
	var n int64
	if err := b.q.row(b.ctx, `SELECT COALESCE(MAX(seq), 0) FROM audit_events`).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: import: %w", err)
	}
	return n, nil
}

// AppendAudit adds events at the end of the audit chain, numbered and linked as any event written
// now (see Store.appendAudit).
func (b *Bulk) AppendAudit(events []domain.AuditEvent) error {
	return b.q.s.appendAudit(b.ctx, b.q, events)
}

// AdoptAuditChain makes the audit events just inserted with their place in the chain (an export's,
// into a database that had none) this database's chain: the genesis names the file's events
// before its first link as the ones from before the chain, and the whole chain must then verify
// under the ring, or the import fails naming the first bad event.
func (b *Bulk) AdoptAuditChain() error {
	sig := b.q.s.signer
	if sig == nil {
		return ErrNoChainSigner
	}
	var last int64
	err := b.q.row(b.ctx, `SELECT COALESCE(MIN(seq) - 1, (SELECT MAX(seq) FROM audit_events), 0) FROM audit_events WHERE hash IS NOT NULL`).Scan(&last)
	if err != nil {
		return fmt.Errorf("store: import: %w", err)
	}
	if err := setGenesis(b.ctx, b.q, sig, last); err != nil {
		return err
	}
	g, err := readGenesis(b.ctx, b.q)
	if err != nil {
		return err
	}
	anchored, err := anchoredSeqs(b.ctx, b.q, "")
	if err != nil {
		return err
	}
	w := NewChainWalk(sig, &g, anchored, nil)
	if err := eachAuditEvent(b.ctx, b.q, w.Step); err != nil {
		return fmt.Errorf("store: import: %w", err)
	}
	rep := w.Finish()
	if rep.Break != nil {
		return rep.Break
	}
	if rep.Unchecked != nil {
		return rep.Unchecked
	}
	return nil
}

// AuditColumns are the columns of an audit event with its place in the chain, in the order of
// AuditArgs and ScanAuditEvent.
const AuditColumns = "id, at, actor_user_id, action, target_id, outcome, detail, seq, chain_key_id, hash"

// AuditArgs is an event's row as stored, its place in the chain included (an export's): the link
// from hex, and no key id or link for an event from before the chain.
func AuditArgs(e *domain.AuditEvent) ([]any, error) {
	var keyID sql.NullString
	var hash []byte
	if e.Hash != "" {
		var err error
		if hash, err = hex.DecodeString(e.Hash); err != nil {
			return nil, err
		}
		keyID = sql.NullString{String: e.ChainKeyID, Valid: true}
	}
	return []any{e.ID, micros(e.At), e.ActorUserID, e.Action, e.TargetID, e.Outcome, e.Detail, e.Seq, keyID, hash}, nil
}

// ScanAuditEvent reads a row of AuditColumns.
func ScanAuditEvent(s Scanner) (domain.AuditEvent, error) { return scanAuditEvent(s) }
