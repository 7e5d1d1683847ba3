package domain

import "slices"

// The closed sets of values the records' fields take (docs/dataset.md), in one place for the
// importer and the tests.
var (
	OrderTypes = []string{"placement", "lease", "rental", "sale", "reprogram", "var_only", "warranty_swap",
		"gateway", "gateway_var_only", "pos_var_only", "terminal_var_only"}
	ConnectionTypes     = []string{"ip", "wifi", "gprs", "ios", "android"}
	LineItemStatuses    = []string{"pending", "allocated", "provisioned", "shipped", "delivered", "deployed", "returned", "canceled"}
	UnitConditions      = []string{"new", "refurbished"}
	UnitStatuses        = []string{"available", "assigned", "defective", "retired"}
	EntityTypes         = []string{"lead", "client", "user", "processor", "document", "ticket", "transactions", "batch", "statement"}
	EquipmentStatuses   = []string{"provisioning", "active", "inactive", "returned"}
	EquipmentTypes      = []string{"terminal", "pin_pad", "lite_pos", "mobile_app", "var_sheet", "gateway"}
	ShipmentStatuses    = []string{"pending", "label_created", "shipped", "in_transit", "out_for_delivery", "delivered", "exception", "canceled"}
	AmexPrograms        = []string{"opt_blue", "esa"}
	EBTBenefitModes     = []string{"cash_back_only", "food_stamps_only", "both"}
	Workflows           = []string{"gateway", "terminal", "var_only"}
	AuditOutcomes       = []string{OutcomeGranted, OutcomeDenied, OutcomeNotFound, OutcomeInvalid}
	InactiveLineItemSet = []string{"canceled", "returned"}
)

// OneOf reports whether v is among values.
func OneOf(v string, values []string) bool { return slices.Contains(values, v) }
