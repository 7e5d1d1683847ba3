package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"backoffice/internal/domain"
)

// PushSource loads a line item of an order visible to the scope, with the objects the line item
// itself points to (its own equipment, VAR sheet and inventory unit ids are the ones used).
func (s *Store) PushSource(ctx context.Context, scope domain.Scope, orderID, lineItemID domain.ID) (*domain.PushSource, error) {
	var src domain.PushSource
	var partner string
	err := s.q().row(ctx, `SELECT o.merchant_id, m.partner_id FROM deployment_orders o JOIN merchants m ON m.id = o.merchant_id WHERE o.id = ?`, orderID).
		Scan(&src.MerchantID, &partner)
	if err != nil {
		return nil, notFoundOr(err, "order %s", orderID)
	}
	if !scope.Sees(domain.ID(partner)) {
		return nil, errNotFound
	}
	li, err := scanLineItem(s.q().row(ctx, `SELECT `+lineItemCols+` FROM line_items WHERE id = ? AND order_id = ?`, lineItemID, orderID))
	if err != nil {
		return nil, notFoundOr(err, "line item %s", lineItemID)
	}
	src.View.LineItem = li
	if err := s.q().row(ctx, `SELECT workflow FROM deployment_models WHERE id = ?`, li.DeploymentModelID).Scan(&src.Workflow); err != nil {
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
	u, err := scanInventoryUnit(s.q().row(ctx, `SELECT `+inventoryUnitCols+` FROM inventory_units WHERE id = ?`, *id))
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
	e, err := scanEquipment(s.q().row(ctx, `SELECT `+cols("e", equipmentCols)+`, dm.name, dm.equipment_type, iu.serial_number
FROM equipment e JOIN deployment_models dm ON dm.id = e.deployment_model_id
LEFT JOIN inventory_units iu ON iu.id = e.inventory_unit_id WHERE e.id = ?`, *id), &model, &typ, &serial)
	if err != nil {
		return fmt.Errorf("store: equipment %s: %w", *id, err)
	}
	v.Equipment, v.ModelName, v.EquipmentType, v.SerialNumber = e, strPtr(model), strPtr(typ), strPtr(serial)
	src.View.Equipment = &v
	return nil
}

func (s *Store) loadVarsheet(ctx context.Context, src *domain.PushSource) error {
	id := src.View.VarsheetID
	if id == nil {
		return nil
	}
	v, err := scanVarsheet(s.q().row(ctx, `SELECT `+varsheetCols+` FROM varsheets WHERE id = ?`, *id))
	if err != nil {
		return fmt.Errorf("store: VAR sheet %s: %w", *id, err)
	}
	src.View.Varsheet = &v
	return nil
}

func (s *Store) loadShipment(ctx context.Context, src *domain.PushSource) error {
	sh, err := scanShipment(s.q().row(ctx, `SELECT `+shipmentCols+` FROM shipments WHERE line_item_id = ?`, src.View.ID))
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
	err := s.q().row(ctx, `SELECT settings FROM file_builds WHERE line_item_id = ?`, src.View.ID).Scan(&settings)
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
	err := s.q().row(ctx, `SELECT id, merchant_id, active, type, adjustment_percent FROM pricing_models WHERE merchant_id = ? AND active = TRUE`, src.MerchantID).
		Scan(&p.ID, &p.MerchantID, &p.Active, &p.Type, &adj)
	if err = noRows(err); err == errNotFound {
		return nil
	} else if err != nil {
		return fmt.Errorf("store: pricing of merchant %s: %w", src.MerchantID, err)
	}
	p.AdjustmentPercent = strPtr(adj)
	src.Pricing = &p
	return nil
}

// AcquirePushLease takes the line item's push lease for holder until now+ttl, unless another
// holder has an unexpired one. The lease lives in the database so that it holds across every
// process sharing it, and expires so that a crashed holder cannot keep it.
func (s *Store) AcquirePushLease(ctx context.Context, lineItemID domain.ID, holder string, ttl time.Duration) (bool, error) {
	now := s.now()
	res, err := s.q().exec(ctx, `INSERT INTO push_leases (line_item_id, holder, expires_at) VALUES (?, ?, ?)
ON CONFLICT (line_item_id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
WHERE push_leases.expires_at <= ?`, lineItemID, holder, micros(now.Add(ttl)), micros(now))
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
	err = noRows(s.q().row(ctx, `SELECT expires_at FROM push_leases WHERE line_item_id = ?`, lineItemID).Scan(&us))
	if err == errNotFound {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("store: push lease %s: %w", lineItemID, err)
	}
	return fromMicros(us), true, nil
}

// ReleasePushLease gives the lease back, if holder still has it.
func (s *Store) ReleasePushLease(ctx context.Context, lineItemID domain.ID, holder string) error {
	_, err := s.q().exec(ctx, `DELETE FROM push_leases WHERE line_item_id = ? AND holder = ?`, lineItemID, holder)
	if err != nil {
		return fmt.Errorf("store: release push lease %s: %w", lineItemID, err)
	}
	return nil
}

// AddMerchantNote writes a note on a merchant.
func (s *Store) AddMerchantNote(ctx context.Context, n domain.MerchantNote) error {
	if n.ID == "" {
		n.ID = domain.NewID()
	}
	_, err := s.q().exec(ctx, `INSERT INTO merchant_notes (id, merchant_id, body, created_at, created_by) VALUES (?, ?, ?, ?, ?)`,
		n.ID, n.MerchantID, n.Body, micros(n.CreatedAt), n.CreatedBy)
	if err != nil {
		return fmt.Errorf("store: merchant note: %w", err)
	}
	return nil
}
