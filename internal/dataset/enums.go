package dataset

// The closed sets of values the records' fields take (docs/dataset.md), which the checker holds
// each record to. An audit event's outcomes are domain.AuditOutcomes, which the API's filter
// takes too.
var (
	orderTypes = []string{"placement", "lease", "rental", "sale", "reprogram", "var_only", "warranty_swap",
		"gateway", "gateway_var_only", "pos_var_only", "terminal_var_only"}
	connectionTypes   = []string{"ip", "wifi", "gprs", "ios", "android"}
	lineItemStatuses  = []string{"pending", "allocated", "provisioned", "shipped", "delivered", "deployed", "returned", "canceled"}
	unitConditions    = []string{"new", "refurbished"}
	unitStatuses      = []string{"available", "assigned", "defective", "retired"}
	entityTypes       = []string{"lead", "client", "user", "processor", "document", "ticket", "transactions", "batch", "statement"}
	equipmentStatuses = []string{"provisioning", "active", "inactive", "returned"}
	equipmentTypes    = []string{"terminal", "pin_pad", "lite_pos", "mobile_app", "var_sheet", "gateway"}
	shipmentStatuses  = []string{"pending", "label_created", "shipped", "in_transit", "out_for_delivery", "delivered", "exception", "canceled"}
	amexPrograms      = []string{"opt_blue", "esa"}
	ebtBenefitModes   = []string{"cash_back_only", "food_stamps_only", "both"}
	workflows         = []string{"gateway", "terminal", "var_only"}
)
