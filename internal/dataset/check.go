package dataset

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"backoffice/internal/deviceparams"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
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

// under records err, which deviceparams found in the value at path, at its whole path
// (fileBuilds[0].settings.tips.presetsPercent[2]), in the file's one path style.
func (c *checker) under(path string, err error) {
	var fe *deviceparams.FieldError
	if errors.As(err, &fe) {
		fe = fe.Under(path)
		c.fail(fe.Path, "%s", fe.Problem)
		return
	}
	c.fail(path, "%v", err)
}

func (c *checker) text(path, s string) {
	if strings.TrimSpace(s) == "" {
		c.fail(path, "required, must not be empty")
	}
}

func (c *checker) enum(path, v string, values []string) {
	if !slices.Contains(values, v) {
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
		return
	}
	c.inYears(path, t)
}

func (c *checker) optTime(path string, t *time.Time) {
	if t != nil {
		c.inYears(path, *t)
	}
}

// inYears refuses a date-time whose year in UTC is outside 0000-9999: every answer and export
// writes date-times in UTC with four digits of year, and one that cannot be written would fail
// every read that meets it.
func (c *checker) inYears(path string, t time.Time) {
	if !writableYear(t) {
		c.fail(path, "a date-time whose year in UTC is outside 0000-9999")
	}
}

// writableYear: t's year in UTC has four digits.
func writableYear(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 0 && y <= 9999
}

func (c *checker) stamps(path string, s *domain.Stamps) {
	c.time(path+".createdAt", s.CreatedAt)
	c.time(path+".updatedAt", s.UpdatedAt)
	c.id(path+".createdBy", &s.CreatedBy)
	c.id(path+".updatedBy", &s.UpdatedBy)
}

var emailish = regexp.MustCompile(`^[^@\s]+@[^@\s]+$`)

// email checks an email address: printable text (user list prints it to a terminal, where a
// control character could rewrite what is shown) within a file's limit for a string (so that a
// user made on the command line exports to a file that imports), then something @ something
// without white space. A file's reading refuses the first two already; user create has no file.
func (c *checker) email(path, s string) {
	bad := strings.IndexFunc(s, unicode.IsControl)
	switch {
	case !utf8.ValidString(s):
		c.fail(path, "not valid UTF-8")
	case utf8.RuneCountInString(s) > maxText:
		c.fail(path, "longer than %d characters (%d)", maxText, utf8.RuneCountInString(s))
	case bad >= 0:
		r, _ := utf8.DecodeRuneInString(s[bad:])
		c.fail(path, "holds a control character (%U): an email address is printable text", r)
	case !emailish.MatchString(s):
		c.fail(path, "not an email address")
	}
}

// The rules of each kind's records, beyond its own id (checker.key). Each takes the record's path
// ("partners[3]") and checks its fields in order: the first problem is the one reported.

func (c *checker) partner(p string, r *domain.Partner) {
	c.text(p+".name", r.Name)
}

func (c *checker) user(p string, r *domain.User) {
	c.optID(p+".partnerId", r.PartnerID)
	c.email(p+".email", r.Email)
	for j, perm := range r.Permissions {
		if !perm.Known() {
			c.fail(fmt.Sprintf("%s.permissions[%d]", p, j), "unknown permission %q", perm)
		}
	}
	if r.ExternalID != nil {
		c.text(p+".externalId", *r.ExternalID)
	}
}

func (c *checker) apiKey(p string, r *domain.APIKey) {
	c.id(p+".userId", &r.UserID)
	c.secret(p+".key", r.Key)
	c.optTime(p+".expiresAt", r.ExpiresAt)
}

func (c *checker) session(p string, r *domain.Session) {
	c.id(p+".userId", &r.UserID)
	c.secret(p+".token", r.Token)
	c.time(p+".expiresAt", r.ExpiresAt)
}

func (c *checker) cardPlan(p string, r *domain.CardPlan) {
	c.text(p+".code", r.Code)
	c.text(p+".displayName", r.DisplayName)
}

func (c *checker) principal(p string, r *domain.Principal) {
	c.id(p+".leadId", &r.LeadID)
	c.text(p+".firstName", r.FirstName)
	c.text(p+".lastName", r.LastName)
	// null is "no SSN on file" (decrypt answers 404); an empty one would be sealed and decrypt to
	// "", an SSN that says nothing.
	if r.SSN != nil && strings.TrimSpace(*r.SSN) == "" {
		c.fail(p+".ssn", "empty: leave ssn out, or null, for a principal with no SSN on file")
	}
}

func (c *checker) merchant(p string, r *domain.Merchant) {
	c.id(p+".partnerId", &r.PartnerID)
	c.optID(p+".leadId", r.LeadID)
	c.text(p+".name", r.Name)
}

func (c *checker) merchantDocument(p string, r *domain.MerchantDocument) {
	c.id(p+".merchantId", &r.MerchantID)
	c.text(p+".fileName", r.FileName)
	c.text(p+".contentType", r.ContentType)
	if n := len(r.ContentBase64); n > maxDocument {
		c.fail(p+".contentBase64", "a document larger than %d MiB (%d bytes once decoded)", maxDocument>>20, n)
	}
}

func (c *checker) deploymentModel(p string, r *domain.DeploymentModel) {
	c.text(p+".name", r.Name)
	c.enum(p+".equipmentType", r.EquipmentType, equipmentTypes)
	c.enum(p+".workflow", r.Workflow, workflows)
}

func (c *checker) deploymentOrder(p string, r *domain.DeploymentOrder) {
	c.id(p+".merchantId", &r.MerchantID)
}

func (c *checker) shipment(p string, r *Shipment) {
	c.id(p+".lineItemId", &r.LineItemID)
	c.enum(p+".status", r.Status, shipmentStatuses)
	c.optTime(p+".shippedDate", r.ShippedDate)
}

func (c *checker) fileBuild(p string, r *domain.FileBuild) {
	c.id(p+".lineItemId", &r.LineItemID)
	if _, err := deviceparams.ParseSettings(r.Settings); err != nil {
		c.under(p+".settings", err)
	}
}

func (c *checker) merchantNote(p string, r *domain.MerchantNote) {
	c.id(p+".merchantId", &r.MerchantID)
	c.text(p+".body", r.Body)
	c.time(p+".createdAt", r.CreatedAt)
	c.id(p+".createdBy", &r.CreatedBy)
}

func (c *checker) auditEvent(p string, r *domain.AuditEvent) {
	c.time(p+".at", r.At)
	c.id(p+".actorUserId", &r.ActorUserID)
	c.text(p+".action", r.Action)
	c.enum(p+".outcome", r.Outcome, domain.AuditOutcomes())
	c.chainLink(p, r)
}

// samActionLogs checks the logs, a million of them in a big file, without building a path for
// each that passes.
func (c *checker) samActionLogs(logs []domain.SAMActionLog) {
	if len(logs) == 0 {
		return
	}
	c.seen["samActionLogs"] = make(map[domain.ID]bool, len(logs)) // grown once, not twenty times
	for i := range logs {
		r := &logs[i]
		if c.err == nil && c.samLogOK(r) {
			continue
		}
		c.key("samActionLogs", i, &r.ID)
		c.samLog(at(samKey, i), r)
	}
}

// samLogOK checks a SAM action log by the rules of samLog, canonicalising its ids, and records
// its id as seen. It reports false, having recorded nothing, when any rule fails: samActionLogs
// then runs the rules again, one by one, to name the first problem.
func (c *checker) samLogOK(r *domain.SAMActionLog) bool {
	id, entity, ok := validSAMLog(r, "")
	if !ok {
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

// samLog holds the SAM action log at path to the rules of a log but for its own id (which the
// caller checks: unique in the key, or on its own), one by one, naming the first it breaks, and
// makes its entity id canonical. The one place of the rules of a log: validSAMLog is the same
// rules at once, for the logs that keep them.
func (c *checker) samLog(path string, r *domain.SAMActionLog) {
	c.id(path+".entityId", &r.EntityID)
	c.text(path+".action", r.Action)
	c.time(path+".actionDate", r.ActionDate)
}

// validSAMLog checks a SAM action log by the rules of samLog and a well-formed id of its own, but
// for that id being unique, and gives its ids in canonical form. known, when not "", is an
// entity id known canonical: a log that names it as it is needs no parse of it (the logs of an
// entity come in runs).
func validSAMLog(r *domain.SAMActionLog, known domain.ID) (id, entity domain.ID, ok bool) {
	if id, ok = canonical(r.ID); !ok {
		return "", "", false
	}
	if entity = known; r.EntityID != known || known == "" {
		if entity, ok = canonical(r.EntityID); !ok {
			return "", "", false
		}
	}
	if strings.TrimSpace(r.Action) == "" || r.ActionDate.IsZero() || !writableYear(r.ActionDate) {
		return "", "", false
	}
	return id, entity, true
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

// secret requires a credential that cannot be guessed, by the one rule of secrets.CheckCredential.
func (c *checker) secret(path, s string) {
	if err := secrets.CheckCredential(s); err != nil {
		c.fail(path, "%v", err)
	}
}

func (c *checker) lead(p string, r *domain.Lead) {
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
		c.optEnum(p+".serviceAcceptance.amexProgram", sa.AmexProgram, amexPrograms)
		c.optEnum(p+".serviceAcceptance.ebtBenefitMode", sa.EBTBenefitMode, ebtBenefitModes)
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
			c.under(p, err)
		}
		if r.Active {
			if j, dup := active[r.MerchantID]; dup {
				c.fail(p+".active", "merchant %s already has an active pricing model (pricingModels[%d])", r.MerchantID, j)
			}
			active[r.MerchantID] = i
		}
	}
}

func (c *checker) inventoryUnit(p string, r *domain.InventoryUnit) {
	c.id(p+".deploymentModelId", &r.DeploymentModelID)
	c.text(p+".serialNumber", r.SerialNumber)
	c.enum(p+".condition", r.Condition, unitConditions)
	c.enum(p+".status", r.Status, unitStatuses)
	c.time(p+".receivedDate", r.ReceivedDate)
	c.stamps(p, &r.Stamps)
}

func (c *checker) equipment(p string, r *domain.Equipment) {
	c.id(p+".entityId", &r.EntityID)
	c.enum(p+".entityType", r.EntityType, entityTypes)
	c.id(p+".deploymentModelId", &r.DeploymentModelID)
	c.optID(p+".inventoryUnitId", r.InventoryUnitID)
	c.optID(p+".varsheetId", r.VarsheetID)
	c.enum(p+".status", r.Status, equipmentStatuses)
	if r.VendorTerminalID != nil && *r.VendorTerminalID == "" {
		c.fail(p+".vendorTerminalId", "must be null or not empty")
	}
	c.optTime(p+".deployedDate", r.DeployedDate)
	c.stamps(p, &r.Stamps)
}

func (c *checker) varsheet(p string, r *domain.Varsheet) {
	c.id(p+".entityId", &r.EntityID)
	c.enum(p+".entityType", r.EntityType, entityTypes)
	c.id(p+".midId", &r.MidID)
	c.text(p+".vNumber", r.VNumber)
	c.stamps(p, &r.Stamps)
}

func (c *checker) lineItem(p string, r *domain.LineItem) {
	c.id(p+".orderId", &r.OrderID)
	c.enum(p+".orderType", r.OrderType, orderTypes)
	c.id(p+".deploymentModelId", &r.DeploymentModelID)
	for j, ct := range r.ConnectionType {
		c.enum(fmt.Sprintf("%s.connectionType[%d]", p, j), ct, connectionTypes)
	}
	c.enum(p+".status", r.Status, lineItemStatuses)
	c.optID(p+".inventoryUnitId", r.InventoryUnitID)
	c.optID(p+".equipmentId", r.EquipmentID)
	c.optID(p+".varsheetId", r.VarsheetID)
	c.stamps(p, &r.Stamps)
}

// chainLink checks an audit event's place in the audit chain, when the file carries it: a
// sequence number from 1, and a link (64 lower-case hex digits) only together with its key id.
// An event with no sequence number is chained anew by the import.
func (c *checker) chainLink(path string, r *domain.AuditEvent) {
	if r.Seq < 0 {
		c.fail(path+".seq", "must be 1 or more")
	}
	if (r.Hash == "") != (r.ChainKeyID == "") {
		c.fail(path+".hash", "hash and chainKeyId come together")
	}
	if r.Hash != "" && (r.Seq == 0 || !isLinkHex(r.Hash)) {
		c.fail(path+".hash", "must be 64 lower-case hex digits, on an event with a seq")
	}
}

func isLinkHex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, ch := range s {
		if (ch < '0' || ch > '9') && (ch < 'a' || ch > 'f') {
			return false
		}
	}
	return true
}

// CheckUser checks one user by the rules import applies to a record of the users key, and puts
// its ids in canonical form; the error's Path is the field at fault ("email", "permissions[1]").
// The command line's user commands check with it, so a user made there is one import accepts.
func CheckUser(u *domain.User) error {
	c := &checker{seen: map[string]map[domain.ID]bool{}}
	c.id("id", &u.ID)
	c.user("", u)
	if c.err == nil {
		return nil
	}
	c.err.Path = strings.TrimPrefix(c.err.Path, ".")
	return c.err
}
