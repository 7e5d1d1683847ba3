package dataset

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"backoffice/internal/deviceparams"
	"backoffice/internal/domain"
)

// checker records the first problem found; later checks are no-ops, so validation code reads as
// a flat list of rules.
type checker struct {
	err *Error
	// seen holds the ids of each key, to reject duplicates within the file.
	seen map[string]map[domain.ID]bool
}

func (c *checker) fail(path, format string, args ...any) {
	if c.err == nil {
		c.err = Errorf(path, format, args...)
	}
}

// id checks a required uuid field and canonicalises it in place.
func (c *checker) id(path string, id *domain.ID) {
	if *id == "" {
		c.fail(path, "required")
		return
	}
	parsed, err := domain.ParseID(string(*id))
	if err != nil {
		c.fail(path, "not a uuid: %q", string(*id))
		return
	}
	*id = parsed
}

// optID checks a nullable uuid field.
func (c *checker) optID(path string, id *domain.ID) {
	if id != nil {
		c.id(path, id)
	}
}

// key checks a record's own id and that it appears once in its key.
func (c *checker) key(section string, i int, id *domain.ID) {
	path := fmt.Sprintf("%s[%d].id", section, i)
	c.id(path, id)
	if c.seen[section] == nil {
		c.seen[section] = map[domain.ID]bool{}
	}
	if c.seen[section][*id] {
		c.fail(path, "duplicate id %s", *id)
	}
	c.seen[section][*id] = true
}

func (c *checker) text(path, s string) {
	if strings.TrimSpace(s) == "" {
		c.fail(path, "required, must not be empty")
	}
}

func (c *checker) enum(path, v string, values []string) {
	if !domain.OneOf(v, values) {
		c.fail(path, "must be one of %s, got %q", strings.Join(values, ", "), v)
	}
}

func (c *checker) optEnum(path string, v *string, values []string) {
	if v != nil {
		c.enum(path, *v, values)
	}
}

func (c *checker) time(path string, t time.Time) {
	if t.IsZero() {
		c.fail(path, "required date-time")
	}
}

func (c *checker) stamps(path string, s *domain.Stamps) {
	c.time(path+".createdAt", s.CreatedAt)
	c.time(path+".updatedAt", s.UpdatedAt)
	c.id(path+".createdBy", &s.CreatedBy)
	c.id(path+".updatedBy", &s.UpdatedBy)
}

var emailish = regexp.MustCompile(`^[^@\s]+@[^@\s]+$`)

// check validates every record on its own; references are checked on import.
func (ds *Dataset) check() error {
	c := &checker{seen: map[string]map[domain.ID]bool{}}
	at := func(section string, i int, field string) string { return fmt.Sprintf("%s[%d].%s", section, i, field) }
	for i := range ds.Partners {
		r := &ds.Partners[i]
		c.key("partners", i, &r.ID)
		c.text(at("partners", i, "name"), r.Name)
	}
	for i := range ds.Users {
		r := &ds.Users[i]
		c.key("users", i, &r.ID)
		c.optID(at("users", i, "partnerId"), r.PartnerID)
		if !emailish.MatchString(r.Email) {
			c.fail(at("users", i, "email"), "not an email address")
		}
		for j, p := range r.Permissions {
			if !domain.OneOf(string(p), permissionNames()) {
				c.fail(fmt.Sprintf("users[%d].permissions[%d]", i, j), "unknown permission %q", p)
			}
		}
	}
	for i := range ds.APIKeys {
		r := &ds.APIKeys[i]
		c.key("apiKeys", i, &r.ID)
		c.id(at("apiKeys", i, "userId"), &r.UserID)
		c.secret(at("apiKeys", i, "key"), r.Key)
	}
	for i := range ds.Sessions {
		r := &ds.Sessions[i]
		c.key("sessions", i, &r.ID)
		c.id(at("sessions", i, "userId"), &r.UserID)
		c.secret(at("sessions", i, "token"), r.Token)
		c.time(at("sessions", i, "expiresAt"), r.ExpiresAt)
	}
	for i := range ds.CardPlans {
		r := &ds.CardPlans[i]
		c.key("cardPlans", i, &r.ID)
		c.text(at("cardPlans", i, "code"), r.Code)
		c.text(at("cardPlans", i, "displayName"), r.DisplayName)
	}
	for i := range ds.Leads {
		c.lead(i, &ds.Leads[i])
	}
	for i := range ds.Principals {
		r := &ds.Principals[i]
		c.key("principals", i, &r.ID)
		c.id(at("principals", i, "leadId"), &r.LeadID)
		c.text(at("principals", i, "firstName"), r.FirstName)
		c.text(at("principals", i, "lastName"), r.LastName)
	}
	for i := range ds.Merchants {
		r := &ds.Merchants[i]
		c.key("merchants", i, &r.ID)
		c.id(at("merchants", i, "partnerId"), &r.PartnerID)
		c.optID(at("merchants", i, "leadId"), r.LeadID)
		c.text(at("merchants", i, "name"), r.Name)
	}
	for i := range ds.MerchantDocuments {
		r := &ds.MerchantDocuments[i]
		c.key("merchantDocuments", i, &r.ID)
		c.id(at("merchantDocuments", i, "merchantId"), &r.MerchantID)
		c.text(at("merchantDocuments", i, "fileName"), r.FileName)
		c.text(at("merchantDocuments", i, "contentType"), r.ContentType)
	}
	c.pricingModels(ds.PricingModels)
	for i := range ds.DeploymentModels {
		r := &ds.DeploymentModels[i]
		c.key("deploymentModels", i, &r.ID)
		c.text(at("deploymentModels", i, "name"), r.Name)
		c.enum(at("deploymentModels", i, "equipmentType"), r.EquipmentType, domain.EquipmentTypes)
		c.enum(at("deploymentModels", i, "workflow"), r.Workflow, domain.Workflows)
	}
	for i := range ds.DeploymentOrders {
		r := &ds.DeploymentOrders[i]
		c.key("deploymentOrders", i, &r.ID)
		c.id(at("deploymentOrders", i, "merchantId"), &r.MerchantID)
	}
	for i := range ds.InventoryUnits {
		c.inventoryUnit(i, &ds.InventoryUnits[i])
	}
	for i := range ds.Equipment {
		c.equipment(i, &ds.Equipment[i])
	}
	for i := range ds.Varsheets {
		c.varsheet(i, &ds.Varsheets[i])
	}
	for i := range ds.LineItems {
		c.lineItem(i, &ds.LineItems[i])
	}
	for i := range ds.Shipments {
		r := &ds.Shipments[i]
		c.key("shipments", i, &r.ID)
		c.id(at("shipments", i, "lineItemId"), &r.LineItemID)
		c.enum(at("shipments", i, "status"), r.Status, domain.ShipmentStatuses)
	}
	for i := range ds.FileBuilds {
		r := &ds.FileBuilds[i]
		c.key("fileBuilds", i, &r.ID)
		c.id(at("fileBuilds", i, "lineItemId"), &r.LineItemID)
		if _, err := deviceparams.ParseSettings(r.Settings); err != nil {
			c.fail(at("fileBuilds", i, "settings"), "%v", err)
		}
	}
	if len(ds.SAMActionLogs) > 0 {
		c.seen["samActionLogs"] = make(map[domain.ID]bool, len(ds.SAMActionLogs)) // grown once, not twenty times
		for i := range ds.SAMActionLogs {
			r := &ds.SAMActionLogs[i]
			if c.err == nil && c.samLogOK(r) {
				continue // a million logs: the rules below, without building a path for each
			}
			c.key("samActionLogs", i, &r.ID)
			c.id(at("samActionLogs", i, "entityId"), &r.EntityID)
			c.text(at("samActionLogs", i, "action"), r.Action)
			c.time(at("samActionLogs", i, "actionDate"), r.ActionDate)
		}
	}
	for i := range ds.MerchantNotes {
		r := &ds.MerchantNotes[i]
		c.key("merchantNotes", i, &r.ID)
		c.id(at("merchantNotes", i, "merchantId"), &r.MerchantID)
		c.text(at("merchantNotes", i, "body"), r.Body)
		c.time(at("merchantNotes", i, "createdAt"), r.CreatedAt)
		c.id(at("merchantNotes", i, "createdBy"), &r.CreatedBy)
	}
	for i := range ds.AuditEvents {
		r := &ds.AuditEvents[i]
		c.key("auditEvents", i, &r.ID)
		c.time(at("auditEvents", i, "at"), r.At)
		c.id(at("auditEvents", i, "actorUserId"), &r.ActorUserID)
		c.text(at("auditEvents", i, "action"), r.Action)
		c.enum(at("auditEvents", i, "outcome"), r.Outcome, domain.AuditOutcomes)
	}
	if c.err != nil {
		return c.err
	}
	return nil
}

// samLogOK checks a SAM action log by the rules of check, canonicalising its ids, and records its
// id as seen. It reports false, having recorded nothing, when any rule fails: check then runs the
// rules again, one by one, to name the first problem.
func (c *checker) samLogOK(r *domain.SAMActionLog) bool {
	id, ok := canonical(r.ID)
	if !ok {
		return false
	}
	entity, ok := canonical(r.EntityID)
	if !ok || strings.TrimSpace(r.Action) == "" || r.ActionDate.IsZero() {
		return false
	}
	seen := c.seen["samActionLogs"]
	if seen == nil {
		seen = map[domain.ID]bool{}
		c.seen["samActionLogs"] = seen
	}
	if seen[id] {
		return false
	}
	seen[id] = true
	r.ID, r.EntityID = id, entity
	return true
}

// canonical is id in canonical form, if it is a uuid. An id in that form already, as every file
// this service writes holds them, is only recognised: that is cheaper than parsing it.
func canonical(id domain.ID) (domain.ID, bool) {
	if domain.IsCanonical(string(id)) {
		return id, true
	}
	parsed, err := domain.ParseID(string(id))
	return parsed, err == nil
}

func permissionNames() []string {
	out := make([]string, len(domain.KnownPermissions))
	for i, p := range domain.KnownPermissions {
		out[i] = string(p)
	}
	return out
}

// secret requires a credential long enough that its plain SHA-256 cannot be brute-forced.
func (c *checker) secret(path, s string) {
	if len(s) < 16 {
		c.fail(path, "must be at least 16 characters")
	}
}

func (c *checker) lead(i int, r *domain.Lead) {
	p := fmt.Sprintf("leads[%d]", i)
	c.key("leads", i, &r.ID)
	c.id(p+".partnerId", &r.PartnerID)
	c.text(p+".businessName", r.BusinessName)
	c.optID(p+".midId", r.MidID)
	if sa := r.ServiceAcceptance; sa != nil {
		seen := map[domain.ID]bool{}
		for j := range sa.SelectedCardPlanIDs {
			jp := fmt.Sprintf("%s.serviceAcceptance.selectedCardPlanIds[%d]", p, j)
			c.id(jp, &sa.SelectedCardPlanIDs[j])
			if seen[sa.SelectedCardPlanIDs[j]] {
				c.fail(jp, "card plan listed twice")
			}
			seen[sa.SelectedCardPlanIDs[j]] = true
		}
		c.optEnum(p+".serviceAcceptance.amexProgram", sa.AmexProgram, domain.AmexPrograms)
		c.optEnum(p+".serviceAcceptance.ebtBenefitMode", sa.EBTBenefitMode, domain.EBTBenefitModes)
	}
}

func (c *checker) pricingModels(models []domain.PricingModel) {
	active := map[domain.ID]int{}
	for i := range models {
		r := &models[i]
		p := fmt.Sprintf("pricingModels[%d]", i)
		c.key("pricingModels", i, &r.ID)
		c.id(p+".merchantId", &r.MerchantID)
		if err := deviceparams.ValidatePricing(r.Type, r.AdjustmentPercent); err != nil {
			c.fail(p, "%v", err)
		}
		if r.Active {
			if j, dup := active[r.MerchantID]; dup {
				c.fail(p+".active", "merchant %s already has an active pricing model (pricingModels[%d])", r.MerchantID, j)
			}
			active[r.MerchantID] = i
		}
	}
}

func (c *checker) inventoryUnit(i int, r *domain.InventoryUnit) {
	p := fmt.Sprintf("inventoryUnits[%d]", i)
	c.key("inventoryUnits", i, &r.ID)
	c.id(p+".deploymentModelId", &r.DeploymentModelID)
	c.text(p+".serialNumber", r.SerialNumber)
	c.enum(p+".condition", r.Condition, domain.UnitConditions)
	c.enum(p+".status", r.Status, domain.UnitStatuses)
	c.time(p+".receivedDate", r.ReceivedDate)
	c.stamps(p, &r.Stamps)
}

func (c *checker) equipment(i int, r *domain.Equipment) {
	p := fmt.Sprintf("equipment[%d]", i)
	c.key("equipment", i, &r.ID)
	c.id(p+".entityId", &r.EntityID)
	c.enum(p+".entityType", r.EntityType, domain.EntityTypes)
	c.id(p+".deploymentModelId", &r.DeploymentModelID)
	c.optID(p+".inventoryUnitId", r.InventoryUnitID)
	c.optID(p+".varsheetId", r.VarsheetID)
	c.enum(p+".status", r.Status, domain.EquipmentStatuses)
	if r.VendorTerminalID != nil && *r.VendorTerminalID == "" {
		c.fail(p+".vendorTerminalId", "must be null or not empty")
	}
	c.stamps(p, &r.Stamps)
}

func (c *checker) varsheet(i int, r *domain.Varsheet) {
	p := fmt.Sprintf("varsheets[%d]", i)
	c.key("varsheets", i, &r.ID)
	c.id(p+".entityId", &r.EntityID)
	c.enum(p+".entityType", r.EntityType, domain.EntityTypes)
	c.id(p+".midId", &r.MidID)
	c.text(p+".vNumber", r.VNumber)
	c.stamps(p, &r.Stamps)
}

func (c *checker) lineItem(i int, r *domain.LineItem) {
	p := fmt.Sprintf("lineItems[%d]", i)
	c.key("lineItems", i, &r.ID)
	c.id(p+".orderId", &r.OrderID)
	c.enum(p+".orderType", r.OrderType, domain.OrderTypes)
	c.id(p+".deploymentModelId", &r.DeploymentModelID)
	for j, ct := range r.ConnectionType {
		c.enum(fmt.Sprintf("%s.connectionType[%d]", p, j), ct, domain.ConnectionTypes)
	}
	c.enum(p+".status", r.Status, domain.LineItemStatuses)
	c.optID(p+".inventoryUnitId", r.InventoryUnitID)
	c.optID(p+".equipmentId", r.EquipmentID)
	c.optID(p+".varsheetId", r.VarsheetID)
	c.stamps(p, &r.Stamps)
}
