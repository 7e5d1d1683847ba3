package bulkload

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"backoffice/internal/column"
	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// Primitives of an import that replaces and deletes records (import --upsert). Like the rest of
// bulk.go they know tables and rows, never the file.

// ErrRowConflict says that a row was refused by a unique constraint other than its id's (a
// credential's hash, the one shipment of a line item). The statement failed, so on PostgreSQL the
// transaction can run nothing more: the caller names the record and gives up.
var ErrRowConflict = errors.New("store: import: a row conflicts with another on a unique column")

// Upserter writes rows into one table, replacing the row of the same id in place: INSERT … ON
// CONFLICT (id) DO UPDATE on both engines. Not SQLite's INSERT OR REPLACE, which deletes the old
// row first and so would trip the foreign keys that other rows hold on it. Columns the caller
// does not list keep their stored values (an API key's revocation, for one).
type Upserter struct {
	ctx   context.Context
	b     *Bulk
	stmt  sqltx.Stmt
	table string
}

// Upserter prepares the upsert of rows of columns (a comma-separated list, id first) into table.
func (b *Bulk) Upserter(table, columns string) (*Upserter, error) {
	cols := strings.Split(columns, ",")
	set := make([]string, 0, len(cols))
	for _, c := range cols[1:] {
		c = strings.TrimSpace(c)
		set = append(set, c+" = excluded."+c)
	}
	query := `INSERT INTO ` + table + ` (` + columns + `) VALUES (?` + strings.Repeat(", ?", len(cols)-1) +
		`) ON CONFLICT (id) DO UPDATE SET ` + strings.Join(set, ", ")
	stmt, err := b.q.Prepare(b.ctx, query)
	if err != nil {
		return nil, fmt.Errorf("store: import: prepare %s: %w", table, err)
	}
	return &Upserter{ctx: b.ctx, b: b, stmt: stmt, table: table}, nil
}

// Close releases the prepared upsert.
func (u *Upserter) Close() { u.stmt.Close() }

// Upsert writes one row, its values in the columns' order. A row refused by another unique
// constraint fails with ErrRowConflict.
func (u *Upserter) Upsert(args ...any) error {
	_, err := u.stmt.ExecContext(u.ctx, args...)
	if err != nil && u.b.engine.IsUniqueViolation(err) {
		return ErrRowConflict
	}
	if err != nil {
		return fmt.Errorf("store: import %s: %w", u.table, err)
	}
	return nil
}

// Delete removes the row of table whose id is id, reporting whether there was one.
func (b *Bulk) Delete(table string, id domain.ID) (bool, error) {
	res, err := b.q.Exec(b.ctx, `DELETE FROM `+table+` WHERE id = ?`, id)
	if err != nil {
		return false, fmt.Errorf("store: import: delete from %s: %w", table, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: import: delete from %s: %w", table, err)
	}
	return n > 0, nil
}

// DeleteWhere removes every row of table whose column is id (the rows that belong to a record:
// a lead's selected card plans).
func (b *Bulk) DeleteWhere(table, column string, id domain.ID) error {
	if _, err := b.q.Exec(b.ctx, `DELETE FROM `+table+` WHERE `+column+` = ?`, id); err != nil {
		return fmt.Errorf("store: import: delete from %s: %w", table, err)
	}
	return nil
}

// Referrer is the id (idColumn's value) of a row of table whose column is id, if there is one:
// what still refers to a record about to be deleted.
func (b *Bulk) Referrer(table, idColumn, column string, id domain.ID) (domain.ID, bool, error) {
	return b.firstID(`SELECT `+idColumn+` FROM `+table+` WHERE `+column+` = ? LIMIT 1`, table, id)
}

// Holder is the id of a row of table whose column holds value, if there is one: the row that one
// refused by that column's unique index collided with.
func (b *Bulk) Holder(table, column string, value any) (domain.ID, bool, error) {
	return b.firstID(`SELECT id FROM `+table+` WHERE `+column+` = ? LIMIT 1`, table, value)
}

func (b *Bulk) firstID(query, table string, arg any) (domain.ID, bool, error) {
	var ref string
	err := b.q.QueryRow(b.ctx, query, arg).Scan(&ref)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("store: import: %s: %w", table, err)
	}
	return domain.ID(ref), true, nil
}

// SAMLogOf is the id of a SAM action log of the entity, if it has one.
func (b *Bulk) SAMLogOf(entity domain.ID) (domain.ID, bool, error) {
	var raw []byte
	err := b.q.QueryRow(b.ctx, `SELECT id FROM sam_action_logs WHERE entity_id = ? LIMIT 1`, column.UUIDArg(entity)).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("store: import: SAM logs of %s: %w", entity, err)
	}
	id, err := column.IDOfUUID(raw)
	return id, err == nil, err
}

// ActivePricingModel is the id of the merchant's active pricing model, if it has one.
func (b *Bulk) ActivePricingModel(merchant domain.ID) (domain.ID, bool, error) {
	return b.firstID(`SELECT id FROM pricing_models WHERE merchant_id = ? AND active = TRUE`, "pricing_models", merchant)
}

// ActivatePricingModel sets the pricing model active. The caller has checked that its merchant has no other
// active model: the partial unique index would refuse it anyway.
func (b *Bulk) ActivatePricingModel(id domain.ID) error {
	_, err := b.q.Exec(b.ctx, `UPDATE pricing_models SET active = TRUE WHERE id = ?`, id)
	if err != nil && b.engine.IsUniqueViolation(err) {
		return ErrRowConflict
	}
	if err != nil {
		return fmt.Errorf("store: import: pricing model %s: %w", id, err)
	}
	return nil
}
