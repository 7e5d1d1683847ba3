package store

import (
	"database/sql"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/store/column"
	"backoffice/internal/store/sqltx"
)

// Scanner reads one row's columns.
type Scanner = sqltx.Scanner

// Row mapping: how the store keeps values in columns, for callers that map rows of their own.

// Micros is a time as stored: microseconds since the epoch, UTC.
func Micros(t time.Time) int64 { return column.Micros(t) }

// FromMicros is the time a stored value of Micros names.
func FromMicros(us int64) time.Time { return column.FromMicros(us) }

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
		column.Micros(u.ReceivedDate), column.Micros(u.CreatedAt), u.CreatedBy, column.Micros(u.UpdatedAt), u.UpdatedBy}
}

func EquipmentArgs(e *domain.Equipment) []any {
	return []any{e.ID, e.EntityID, e.EntityType, e.DeploymentModelID, nullID(e.InventoryUnitID),
		nullString(e.VendorTerminalID), nullID(e.VarsheetID), e.Status, nullMicros(e.DeployedDate),
		column.Micros(e.CreatedAt), e.CreatedBy, column.Micros(e.UpdatedAt), e.UpdatedBy}
}

func VarsheetArgs(v *domain.Varsheet) []any { return varsheetArgs(v) }

func LineItemArgs(li *domain.LineItem) []any {
	return []any{li.ID, li.OrderID, li.OrderType, li.DeploymentModelID, connectionTypeArg(li.ConnectionType),
		li.Status, nullID(li.InventoryUnitID), nullID(li.EquipmentID), nullID(li.VarsheetID),
		column.Micros(li.CreatedAt), li.CreatedBy, column.Micros(li.UpdatedAt), li.UpdatedBy}
}

func ShipmentArgs(sh *domain.Shipment) []any {
	return []any{sh.ID, sh.Status, nullString(sh.CarrierCode), nullString(sh.TrackingNumber), nullMicros(sh.ShippedDate)}
}
