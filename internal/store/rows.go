package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"backoffice/internal/column"
	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// Row mapping shared by the service's queries, the import and the export: each record's column
// list, its values in that order (…Args) and its scan, in one place. A query selects
// "<alias>.<col>, …" via cols.

type scanner interface{ Scan(dest ...any) error }

// runner is what a read or a write of the store needs, on the pool (*sqltx.DB) or in a
// transaction (*sqltx.Tx), for the few queries run both ways.
type runner interface {
	Exec(ctx context.Context, query string, args ...any) (sql.Result, error)
	Query(ctx context.Context, query string, args ...any) (*sqltx.Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) sqltx.Row
}

const inventoryUnitCols = `id, deployment_model_id, serial_number, condition, status, received_date, created_at, created_by, updated_at, updated_by`

func scanInventoryUnit(s scanner) (domain.InventoryUnit, error) {
	var u domain.InventoryUnit
	var received, created, updated int64
	err := s.Scan(&u.ID, &u.DeploymentModelID, &u.SerialNumber, &u.Condition, &u.Status, &received,
		&created, &u.CreatedBy, &updated, &u.UpdatedBy)
	u.ReceivedDate, u.CreatedAt, u.UpdatedAt = column.FromMicros(received), column.FromMicros(created), column.FromMicros(updated)
	return u, err
}

// InventoryUnitArgs is the record's values in the order of its columns.
func InventoryUnitArgs(u *domain.InventoryUnit) []any {
	return []any{u.ID, u.DeploymentModelID, u.SerialNumber, u.Condition, u.Status,
		column.Micros(u.ReceivedDate), column.Micros(u.CreatedAt), u.CreatedBy, column.Micros(u.UpdatedAt), u.UpdatedBy}
}

const equipmentCols = `id, entity_id, entity_type, deployment_model_id, inventory_unit_id, vendor_terminal_id, varsheet_id, status, deployed_date, created_at, created_by, updated_at, updated_by`

func scanEquipment(s scanner, extra ...any) (domain.Equipment, error) {
	var e domain.Equipment
	var unit, varsheet, vendor sql.NullString
	var deployed sql.NullInt64
	var created, updated int64
	dest := []any{&e.ID, &e.EntityID, &e.EntityType, &e.DeploymentModelID, &unit, &vendor, &varsheet, &e.Status,
		&deployed, &created, &e.CreatedBy, &updated, &e.UpdatedBy}
	err := s.Scan(append(dest, extra...)...)
	e.InventoryUnitID, e.VendorTerminalID, e.VarsheetID = column.IDPtr(unit), column.StrPtr(vendor), column.IDPtr(varsheet)
	e.DeployedDate, e.CreatedAt, e.UpdatedAt = column.TimePtr(deployed), column.FromMicros(created), column.FromMicros(updated)
	return e, err
}

// EquipmentArgs is the record's values in the order of its columns.
func EquipmentArgs(e *domain.Equipment) []any {
	return []any{e.ID, e.EntityID, e.EntityType, e.DeploymentModelID, column.NullID(e.InventoryUnitID),
		column.NullString(e.VendorTerminalID), column.NullID(e.VarsheetID), e.Status, column.NullMicros(e.DeployedDate),
		column.Micros(e.CreatedAt), e.CreatedBy, column.Micros(e.UpdatedAt), e.UpdatedBy}
}

const varsheetCols = `id, entity_id, entity_type, mid_id, v_number, terminal_id_number, agent, chain, store_number,
merchant_number, currency_code, time_zone_code, time_zone_differential, discover_number, amex_opt_blue, pin_debit,
ebt_food_stamps, ebt_cash, merchant_location_number, merchant_aba_number, merchant_settlement_agent,
reimbursement_attribute, sharing_group, industry, fcs_number, created_at, created_by, updated_at, updated_by`

func scanVarsheet(s scanner) (domain.Varsheet, error) {
	var v domain.Varsheet
	var strs [16]sql.NullString
	var bools [4]sql.NullBool
	var created, updated int64
	err := s.Scan(&v.ID, &v.EntityID, &v.EntityType, &v.MidID, &v.VNumber,
		&strs[0], &strs[1], &strs[2], &strs[3], &strs[4], &strs[5], &strs[6], &strs[7], &strs[8],
		&bools[0], &bools[1], &bools[2], &bools[3],
		&strs[9], &strs[10], &strs[11], &strs[12], &strs[13], &strs[14], &strs[15],
		&created, &v.CreatedBy, &updated, &v.UpdatedBy)
	if err != nil {
		return v, err
	}
	for i, dst := range varsheetStrings(&v) {
		*dst = column.StrPtr(strs[i])
	}
	for i, dst := range varsheetBools(&v) {
		*dst = column.BoolPtr(bools[i])
	}
	v.CreatedAt, v.UpdatedAt = column.FromMicros(created), column.FromMicros(updated)
	return v, nil
}

// varsheetStrings and varsheetBools list the nullable fields in column order, so that scanning and
// inserting cannot disagree about it.
func varsheetStrings(v *domain.Varsheet) []**string {
	return []**string{&v.TerminalIDNumber, &v.Agent, &v.Chain, &v.StoreNumber, &v.MerchantNumber, &v.CurrencyCode,
		&v.TimeZoneCode, &v.TimeZoneDifferential, &v.DiscoverNumber,
		&v.MerchantLocationNumber, &v.MerchantABANumber, &v.MerchantSettlementAgent, &v.ReimbursementAttribute,
		&v.SharingGroup, &v.Industry, &v.FcsNumber}
}

func varsheetBools(v *domain.Varsheet) []**bool {
	return []**bool{&v.AmexOptBlue, &v.PinDebit, &v.EBTFoodStamps, &v.EBTCash}
}

func varsheetArgs(v *domain.Varsheet) []any {
	args := []any{v.ID, v.EntityID, v.EntityType, v.MidID, v.VNumber}
	strs := varsheetStrings(v)
	for _, p := range strs[:9] {
		args = append(args, column.NullString(*p))
	}
	for _, p := range varsheetBools(v) {
		args = append(args, column.NullBool(*p))
	}
	for _, p := range strs[9:] {
		args = append(args, column.NullString(*p))
	}
	return append(args, column.Micros(v.CreatedAt), v.CreatedBy, column.Micros(v.UpdatedAt), v.UpdatedBy)
}

const lineItemCols = `id, order_id, order_type, deployment_model_id, connection_type, status, inventory_unit_id, equipment_id, varsheet_id, created_at, created_by, updated_at, updated_by`

func scanLineItem(s scanner) (domain.LineItem, error) {
	var li domain.LineItem
	var conn, unit, equip, varsheet sql.NullString
	var created, updated int64
	err := s.Scan(&li.ID, &li.OrderID, &li.OrderType, &li.DeploymentModelID, &conn, &li.Status, &unit, &equip,
		&varsheet, &created, &li.CreatedBy, &updated, &li.UpdatedBy)
	if err != nil {
		return li, err
	}
	if conn.Valid {
		if err := json.Unmarshal([]byte(conn.String), &li.ConnectionType); err != nil {
			return li, fmt.Errorf("line item %s: connection_type: %w", li.ID, err)
		}
	}
	li.InventoryUnitID, li.EquipmentID, li.VarsheetID = column.IDPtr(unit), column.IDPtr(equip), column.IDPtr(varsheet)
	li.CreatedAt, li.UpdatedAt = column.FromMicros(created), column.FromMicros(updated)
	return li, nil
}

// LineItemArgs is the record's values in the order of its columns.
func LineItemArgs(li *domain.LineItem) []any {
	return []any{li.ID, li.OrderID, li.OrderType, li.DeploymentModelID, connectionTypeArg(li.ConnectionType),
		li.Status, column.NullID(li.InventoryUnitID), column.NullID(li.EquipmentID), column.NullID(li.VarsheetID),
		column.Micros(li.CreatedAt), li.CreatedBy, column.Micros(li.UpdatedAt), li.UpdatedBy}
}

func connectionTypeArg(ct []string) sql.NullString {
	if ct == nil {
		return sql.NullString{}
	}
	b, _ := json.Marshal(ct)
	return sql.NullString{String: string(b), Valid: true}
}

const shipmentCols = `id, status, carrier_code, tracking_number, shipped_date`

func scanShipment(s scanner, extra ...any) (domain.Shipment, error) {
	var sh domain.Shipment
	var carrier, tracking sql.NullString
	var shipped sql.NullInt64
	err := s.Scan(append([]any{&sh.ID, &sh.Status, &carrier, &tracking, &shipped}, extra...)...)
	sh.CarrierCode, sh.TrackingNumber, sh.ShippedDate = column.StrPtr(carrier), column.StrPtr(tracking), column.TimePtr(shipped)
	return sh, err
}

// ShipmentArgs is the record's values in the order of its columns.
func ShipmentArgs(sh *domain.Shipment) []any {
	return []any{sh.ID, sh.Status, column.NullString(sh.CarrierCode), column.NullString(sh.TrackingNumber), column.NullMicros(sh.ShippedDate)}
}

const pushRecordCols = `line_item_id, holder, merchant_id, user_id, terminal_id, started_at, attempts`

var insertPushRecord = `INSERT INTO push_records (` + pushRecordCols + `) VALUES ` + sqltx.ValueRows(7, 1)

func pushRecordArgs(r *domain.PushRecord) []any {
	return []any{r.LineItemID, r.Holder, r.MerchantID, r.UserID, r.TerminalID, column.Micros(r.StartedAt), r.Attempts}
}

func scanPushRecord(s scanner) (domain.PushRecord, error) {
	var r domain.PushRecord
	var started int64
	err := s.Scan(&r.LineItemID, &r.Holder, &r.MerchantID, &r.UserID, &r.TerminalID, &started, &r.Attempts)
	r.StartedAt = column.FromMicros(started)
	return r, err
}

const merchantNoteCols = `id, merchant_id, body, created_at, created_by`

var insertMerchantNote = `INSERT INTO merchant_notes (` + merchantNoteCols + `) VALUES ` + sqltx.ValueRows(5, 1)

func scanMerchantNote(s scanner) (domain.MerchantNote, error) {
	var n domain.MerchantNote
	var at int64
	err := s.Scan(&n.ID, &n.MerchantID, &n.Body, &at, &n.CreatedBy)
	n.CreatedAt = column.FromMicros(at)
	return n, err
}

// MerchantNoteArgs is the record's values in the order of its columns.
func MerchantNoteArgs(n *domain.MerchantNote) []any {
	return []any{n.ID, n.MerchantID, n.Body, column.Micros(n.CreatedAt), n.CreatedBy}
}

// cols prefixes every column of a list with a table alias.
func cols(alias, list string) string {
	parts := strings.Split(list, ",")
	for i, c := range parts {
		parts[i] = alias + "." + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

// readAll runs query with args and scans every row. Its errors are the query's, classified; the
// caller says what it was reading.
func readAll[T any](ctx context.Context, q runner, query string, scan func(scanner) (T, error), args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
