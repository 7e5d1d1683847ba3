package store

import (
	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// Scanner reads one row's columns.
type Scanner = sqltx.Scanner

// The columns and mapping of the records the store also writes or reads itself (the push loader,
// the merchant notes, the user commands), shared with the import and the export so that they cannot disagree; their
// values in column order are the …Args functions beside each scan (rows.go).
const (
	InventoryUnitColumns = inventoryUnitCols
	EquipmentColumns     = equipmentCols
	VarsheetColumns      = varsheetCols
	LineItemColumns      = lineItemCols
	ShipmentColumns      = shipmentCols
	MerchantNoteColumns  = merchantNoteCols
	UserColumns          = userColumns
)

func ScanInventoryUnit(s Scanner) (domain.InventoryUnit, error) { return scanInventoryUnit(s) }
func ScanEquipment(s Scanner) (domain.Equipment, error)         { return scanEquipment(s) }
func ScanVarsheet(s Scanner) (domain.Varsheet, error)           { return scanVarsheet(s) }
func ScanLineItem(s Scanner) (domain.LineItem, error)           { return scanLineItem(s) }
func ScanMerchantNote(s Scanner) (domain.MerchantNote, error)   { return scanMerchantNote(s) }
func ScanUser(s Scanner) (domain.User, error)                   { return scanUser(s) }

// ScanShipment scans a shipment's columns and then extra, columns the query added after them.
func ScanShipment(s Scanner, extra ...any) (domain.Shipment, error) { return scanShipment(s, extra...) }

// VarsheetArgs is the record's values in the order of its columns.
func VarsheetArgs(v *domain.Varsheet) []any { return varsheetArgs(v) }
