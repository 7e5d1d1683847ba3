package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"backoffice/internal/column"
	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// PushSource loads a line item of an order visible to the scope, with the objects the line item
// itself points to (its own equipment, VAR sheet and inventory unit ids are the ones used).
func (s *Store) PushSource(ctx context.Context, scope domain.Scope, orderID, lineItemID domain.ID) (*domain.PushSource, error) {
	var src domain.PushSource
	var partner string
	err := s.pool.QueryRow(ctx, `SELECT o.merchant_id, m.partner_id FROM deployment_orders o JOIN merchants m ON m.id = o.merchant_id WHERE o.id = ?`, orderID).
		Scan(&src.MerchantID, &partner)
	if err != nil {
		return nil, notFoundOr(err, "order %s", orderID)
	}
	if !scope.Sees(domain.ID(partner)) {
		return nil, errNotFound
	}
	li, err := scanLineItem(s.pool.QueryRow(ctx, `SELECT `+lineItemCols+` FROM line_items WHERE id = ? AND order_id = ?`, lineItemID, orderID))
	if err != nil {
		return nil, notFoundOr(err, "line item %s", lineItemID)
	}
	src.View.LineItem = li
	if err := s.pool.QueryRow(ctx, `SELECT workflow FROM deployment_models WHERE id = ?`, li.DeploymentModelID).Scan(&src.Workflow); err != nil {
		return nil, fmt.Errorf("store: deployment model of line item %s: %w", li.ID, err)
	}
	steps := []func(context.Context, *domain.PushSource) error{s.loadUnit, s.loadEquipment, s.loadVarsheet, s.loadShipment, s.loadFileBuild, s.loadPricing}
	for _, step := range steps {
		if err := step(ctx, &src); err != nil {
			return nil, err
		}
	}
	return &src, nil
}

func (s *Store) loadUnit(ctx context.Context, src *domain.PushSource) error {
	id := src.View.InventoryUnitID
	if id == nil {
		return nil
	}
	u, err := scanInventoryUnit(s.pool.QueryRow(ctx, `SELECT `+inventoryUnitCols+` FROM inventory_units WHERE id = ?`, *id))
	if err != nil {
		return fmt.Errorf("store: inventory unit %s: %w", *id, err)
	}
	src.View.InventoryUnit = &u
	return nil
}

// loadEquipment also derives modelName and equipmentType from the equipment's deployment model,
// and serialNumber from its inventory unit.
func (s *Store) loadEquipment(ctx context.Context, src *domain.PushSource) error {
	id := src.View.EquipmentID
	if id == nil {
		return nil
	}
	var v domain.EquipmentView
	var model, typ, serial sql.NullString
	e, err := scanEquipment(s.pool.QueryRow(ctx, `SELECT `+cols("e", equipmentCols)+`, dm.name, dm.equipment_type, iu.serial_number
FROM equipment e JOIN deployment_models dm ON dm.id = e.deployment_model_id
LEFT JOIN inventory_units iu ON iu.id = e.inventory_unit_id WHERE e.id = ?`, *id), &model, &typ, &serial)
	if err != nil {
		return fmt.Errorf("store: equipment %s: %w", *id, err)
	}
	v.Equipment, v.ModelName, v.EquipmentType, v.SerialNumber = e, column.StrPtr(model), column.StrPtr(typ), column.StrPtr(serial)
	src.View.Equipment = &v
	return nil
}

func (s *Store) loadVarsheet(ctx context.Context, src *domain.PushSource) error {
	id := src.View.VarsheetID
	if id == nil {
		return nil
	}
	v, err := scanVarsheet(s.pool.QueryRow(ctx, `SELECT `+varsheetCols+` FROM varsheets WHERE id = ?`, *id))
	if err != nil {
		return fmt.Errorf("store: VAR sheet %s: %w", *id, err)
	}
	src.View.Varsheet = &v
	return nil
}

func (s *Store) loadShipment(ctx context.Context, src *domain.PushSource) error {
	sh, err := scanShipment(s.pool.QueryRow(ctx, `SELECT `+shipmentCols+` FROM shipments WHERE line_item_id = ?`, src.View.ID))
	if err = noRows(err); err == errNotFound {
		return nil
	} else if err != nil {
		return fmt.Errorf("store: shipment of line item %s: %w", src.View.ID, err)
	}
	src.View.Shipment = &sh
	return nil
}

func (s *Store) loadFileBuild(ctx context.Context, src *domain.PushSource) error {
	var settings string
	err := s.pool.QueryRow(ctx, `SELECT settings FROM file_builds WHERE line_item_id = ?`, src.View.ID).Scan(&settings)
	if err = noRows(err); err == errNotFound {
		return nil
	} else if err != nil {
		return fmt.Errorf("store: file build of line item %s: %w", src.View.ID, err)
	}
	src.FileBuild = json.RawMessage(settings)
	return nil
}

func (s *Store) loadPricing(ctx context.Context, src *domain.PushSource) error {
	var p domain.PricingModel
	var adj sql.NullString
	err := s.pool.QueryRow(ctx, `SELECT id, merchant_id, active, type, adjustment_percent FROM pricing_models WHERE merchant_id = ? AND active = TRUE`, src.MerchantID).
		Scan(&p.ID, &p.MerchantID, &p.Active, &p.Type, &adj)
	if err = noRows(err); err == errNotFound {
		return nil
	} else if err != nil {
		return fmt.Errorf("store: pricing of merchant %s: %w", src.MerchantID, err)
	}
	p.AdjustmentPercent = column.StrPtr(adj)
	src.Pricing = &p
	return nil
}

// AcquirePushLease takes the line item's push lease for holder until now+ttl, unless another
// holder has one unexpired at now (the caller's clock, as NoteAbandonedPushes's). The lease lives
// in the database so that it holds across every process sharing it, and expires so that a crashed
// holder cannot keep it.
func (s *Store) AcquirePushLease(ctx context.Context, lineItemID domain.ID, holder string, now time.Time, ttl time.Duration) (bool, error) {
	res, err := s.pool.Exec(ctx, `INSERT INTO push_leases (line_item_id, holder, expires_at) VALUES (?, ?, ?)
ON CONFLICT (line_item_id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
WHERE push_leases.expires_at <= ?`, lineItemID, holder, column.Micros(now.Add(ttl)), column.Micros(now))
	if err != nil {
		return false, fmt.Errorf("store: push lease %s: %w", lineItemID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: push lease %s: %w", lineItemID, err)
	}
	return n == 1, nil
}

// PushLeaseExpiry tells when the line item's push lease expires, for a caller refused by
// AcquirePushLease; ok is false when there is no lease any more (released meanwhile).
func (s *Store) PushLeaseExpiry(ctx context.Context, lineItemID domain.ID) (expires time.Time, ok bool, err error) {
	var us int64
	err = noRows(s.pool.QueryRow(ctx, `SELECT expires_at FROM push_leases WHERE line_item_id = ?`, lineItemID).Scan(&us))
	if err == errNotFound {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("store: push lease %s: %w", lineItemID, err)
	}
	return column.FromMicros(us), true, nil
}

// ReleasePushLease gives the lease back, if holder still has it.
func (s *Store) ReleasePushLease(ctx context.Context, lineItemID domain.ID, holder string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM push_leases WHERE line_item_id = ? AND holder = ?`, lineItemID, holder)
	if err != nil {
		return fmt.Errorf("store: release push lease %s: %w", lineItemID, err)
	}
	return nil
}

func insertNote(ctx context.Context, q runner, n domain.MerchantNote) error {
	if n.ID == "" {
		n.ID = domain.NewID()
	}
	_, err := q.Exec(ctx, insertMerchantNote, MerchantNoteArgs(&n)...)
	if err != nil {
		return fmt.Errorf("store: merchant note: %w", err)
	}
	return nil
}

// NoteOf makes the note of a push record left behind: its push stopped, or the database refused
// the push's own note, so what the record holds (who, where, how many attempts) is all there is.
type NoteOf = func(domain.PushRecord) domain.MerchantNote

// BeginPush writes the record of a push about to send its first request to the gateway, under the
// holder's lease: if it cannot be written, the push must not call the gateway. A record an earlier
// push of the line item left behind is noted (noteOf) in the same transaction.
func (s *Store) BeginPush(ctx context.Context, r domain.PushRecord, noteOf NoteOf) error {
	err := s.pool.Tx(ctx, func(q *sqltx.Tx) error {
		if _, err := notePushRecords(ctx, q, `line_item_id = ?`, []any{r.LineItemID}, noteOf); err != nil {
			return err
		}
		_, err := q.Exec(ctx, insertPushRecord, pushRecordArgs(&r)...)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: push record %s: %w", r.LineItemID, err)
	}
	return nil
}

// errRecordTaken is a push record that is no longer the holder's: its lease expired and the record
// was noted by another.
var errRecordTaken = errors.New("the push record was noted by another push: its lease had expired")

// CountPushAttempt counts one more request to the gateway on the holder's push record, before it
// is sent: a request the database could not count must not be sent.
func (s *Store) CountPushAttempt(ctx context.Context, lineItemID domain.ID, holder string) error {
	res, err := s.pool.Exec(ctx, `UPDATE push_records SET attempts = attempts + 1 WHERE line_item_id = ? AND holder = ?`, lineItemID, holder)
	if err == nil {
		err = oneRow(res)
	}
	if err != nil {
		return fmt.Errorf("store: push attempt %s: %w", lineItemID, err)
	}
	return nil
}

// FinishPush replaces the holder's push record with the push's note, in one transaction. noted is
// false when the record was no longer the holder's (another push noted it once the lease had
// expired): then nothing is written.
func (s *Store) FinishPush(ctx context.Context, lineItemID domain.ID, holder string, note domain.MerchantNote) (noted bool, err error) {
	err = s.pool.Tx(ctx, func(q *sqltx.Tx) error {
		res, err := q.Exec(ctx, `DELETE FROM push_records WHERE line_item_id = ? AND holder = ?`, lineItemID, holder)
		if err == nil {
			err = oneRow(res)
		}
		if err != nil {
			return err
		}
		return insertNote(ctx, q, note)
	})
	if errors.Is(err, errRecordTaken) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: push note %s: %w", lineItemID, err)
	}
	return true, nil
}

// NoteAbandonedPushes notes every push record whose holder's lease has expired or was released
// (its push stopped, or the database refused its note), as of now, and returns how many it noted.
// A read finds them first, so that a database with none takes no write.
func (s *Store) NoteAbandonedPushes(ctx context.Context, now time.Time, noteOf NoteOf) (int, error) {
	const abandoned = `NOT EXISTS (SELECT 1 FROM push_leases l
WHERE l.line_item_id = push_records.line_item_id AND l.holder = push_records.holder AND l.expires_at > ?)`
	var found int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM push_records WHERE `+abandoned, column.Micros(now)).Scan(&found); err != nil {
		return 0, fmt.Errorf("store: abandoned push records: %w", err)
	}
	if found == 0 {
		return 0, nil
	}
	var n int
	err := s.pool.Tx(ctx, func(q *sqltx.Tx) error {
		var err error
		n, err = notePushRecords(ctx, q, abandoned, []any{column.Micros(now)}, noteOf)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: abandoned push records: %w", err)
	}
	return n, nil
}

// notePushRecords deletes the push records that where selects and writes each one's note.
func notePushRecords(ctx context.Context, q *sqltx.Tx, where string, args []any, noteOf NoteOf) (int, error) {
	rows, err := q.Query(ctx, `DELETE FROM push_records WHERE `+where+` RETURNING `+pushRecordCols, args...)
	if err != nil {
		return 0, err
	}
	var left []domain.PushRecord
	for rows.Next() { // read to the end before the next statement: one connection runs one at a time
		r, err := scanPushRecord(rows)
		if err != nil {
			rows.Close()
			return 0, err
		}
		left = append(left, r)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return 0, err
	}
	for _, r := range left {
		if err := insertNote(ctx, q, noteOf(r)); err != nil {
			return 0, err
		}
	}
	return len(left), nil
}

// oneRow is errRecordTaken unless the statement changed one row.
func oneRow(res sql.Result) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != 1 {
		return errRecordTaken
	}
	return nil
}
