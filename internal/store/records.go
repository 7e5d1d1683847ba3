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

// The columns and mapping of the records the store also writes or reads itself (the push loader,
// the merchant notes), shared with the import and the export so that they cannot disagree; their
// values in column order are the …Args functions beside each scan (rows.go).
const (
	InventoryUnitColumns = inventoryUnitCols
	EquipmentColumns     = equipmentCols
	VarsheetColumns      = varsheetCols
	LineItemColumns      = lineItemCols
	ShipmentColumns      = shipmentCols
	MerchantNoteColumns  = merchantNoteCols
)

func ScanInventoryUnit(s Scanner) (domain.InventoryUnit, error) { return scanInventoryUnit(s) }
func ScanEquipment(s Scanner) (domain.Equipment, error)         { return scanEquipment(s) }
func ScanVarsheet(s Scanner) (domain.Varsheet, error)           { return scanVarsheet(s) }
func ScanLineItem(s Scanner) (domain.LineItem, error)           { return scanLineItem(s) }
func ScanMerchantNote(s Scanner) (domain.MerchantNote, error)   { return scanMerchantNote(s) }

// ScanShipment scans a shipment's columns and then extra, columns the query added after them.
func ScanShipment(s Scanner, extra ...any) (domain.Shipment, error) { return scanShipment(s, extra...) }

// VarsheetArgs is the record's values in the order of its columns.
func VarsheetArgs(v *domain.Varsheet) []any { return varsheetArgs(v) }
