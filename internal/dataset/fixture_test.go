package dataset_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/testdb"
)

// id makes the fixture's fixed, readable ids (valid version-4 uuids).
func id(n int) domain.ID { return domain.ID(fmt.Sprintf("00000000-0000-4000-8000-%012d", n)) }

// Credentials and secrets of the fixture.
const (
	staffKey       = "staff-key-0000000000000001"
	partnerKey     = "partner-key-00000000000001"
	expiredKey     = "expired-key-00000000000001"
	staffSession   = "staff-session-000000000001"
	expiredSession = "expired-session-0000000001"
	principalSSN   = "123-45-6789"
	otherSSN       = "987-65-4321"
)

var (
	partnerA, partnerB         = id(1), id(2)
	staffUser, userA, userB    = id(101), id(102), id(103)
	planVisa, planMC, planAmex = id(201), id(202), id(203)
	leadA, leadB, leadNotSet   = id(301), id(302), id(303)
	principalA, principalNoSSN = id(401), id(402)
	principalB                 = id(403)
	merchantA, merchantB       = id(501), id(502)
	docA1, docA2, docB1        = id(601), id(602), id(603)
	gatewayModel, pinPadModel  = id(701), id(702)
	orderA, orderB             = id(801), id(802)
	unitA                      = id(901)
	equipmentA, equipmentLoose = id(1001), id(1002)
	itemA, itemB               = id(1101), id(1102)
	varsheetA                  = id(1201)
)

// fixtureNow is the fixture's "now"; microsecond precision, as the store keeps times.
var fixtureNow = time.Date(2026, 11, 21, 9, 30, 0, 123456000, time.UTC)

// settings is compact so that it comes back byte for byte.
var settings = json.RawMessage(`{"tips":{"enabled":true,"presetsPercent":[15,20],"allowCustom":false},"tax":{"enabled":true,"ratePercent":"8.250"},"avs":{"enabled":true,"mode":"zip"},"receipt":{"merchantCopy":true,"customerCopy":"prompt","headerLines":["FIXTURE"],"footerLines":[]},"transactions":{"sale":true,"refund":true,"void":true,"preAuth":false,"manualEntry":false,"cashBack":false},"autoBatch":{"enabled":true,"time":"23:00"}}`)

// fixture holds a record of every kind, each section in id order (the export's order), with
// the cases the suite checks: two partners, expired credentials, a lead with and one without a
// stored acceptance, a principal without an SSN, equipment on no line item.
func fixture() *dataset.Dataset {
	now := fixtureNow
	stamps := domain.Stamps{CreatedAt: now.Add(-48 * time.Hour), CreatedBy: staffUser, UpdatedAt: now, UpdatedBy: userA}
	ds := &dataset.Dataset{
		Partners: []domain.Partner{{ID: partnerA, Name: "Partner A"}, {ID: partnerB, Name: "Partner B"}},
		Users: []domain.User{
			{ID: staffUser, Email: "staff@example.com", Permissions: []domain.Permission{domain.PermAll}},
			{ID: userA, PartnerID: &partnerA, Email: "a@example.com", Permissions: []domain.Permission{domain.PermReadSAMActionLogs, domain.PermDecryptPrincipals}},
			{ID: userB, PartnerID: &partnerB, Email: "b@example.com", Permissions: []domain.Permission{}},
		},
		APIKeys: []domain.APIKey{
			{ID: id(111), UserID: staffUser, Key: staffKey},
			{ID: id(112), UserID: userA, Key: partnerKey, ExpiresAt: ptr(now.Add(24 * time.Hour))},
			{ID: id(113), UserID: staffUser, Key: expiredKey, ExpiresAt: ptr(now.Add(-time.Hour))},
		},
		Sessions: []domain.Session{
			{ID: id(121), UserID: staffUser, Token: staffSession, ExpiresAt: now.Add(time.Hour)},
			{ID: id(122), UserID: userA, Token: expiredSession, ExpiresAt: now.Add(-time.Minute)},
		},
		// Sort order differs from id order, so that the catalogue's order is seen to be sortOrder.
		CardPlans: []domain.CardPlan{
			{ID: planVisa, Code: "visa", DisplayName: "Visa", SortOrder: 2},
			{ID: planMC, Code: "mastercard", DisplayName: "Mastercard", SortOrder: 1},
			{ID: planAmex, Code: "amex", DisplayName: "American Express", SortOrder: 3},
		},
		Leads: []domain.Lead{
			{ID: leadA, PartnerID: partnerA, BusinessName: "Lead A", MidID: ptr(id(3001)),
				ServiceAcceptance: &domain.StoredAcceptance{Configured: true, SelectedCardPlanIDs: []domain.ID{planVisa, planAmex},
					EBTFcsNumber: ptr("1234567"), AmexProgram: ptr("opt_blue"), AmexEsaNumber: ptr("ESA-1"), EBTBenefitMode: ptr("both")}},
			{ID: leadB, PartnerID: partnerB, BusinessName: "Lead B"},
			{ID: leadNotSet, PartnerID: partnerA, BusinessName: "Stored but not configured", MidID: ptr(id(3003)),
				ServiceAcceptance: &domain.StoredAcceptance{Configured: false, SelectedCardPlanIDs: []domain.ID{}}},
		},
		Principals: []domain.Principal{
			{ID: principalA, LeadID: leadA, FirstName: "Dana", LastName: "Able", SSN: ptr(principalSSN)},
			{ID: principalNoSSN, LeadID: leadA, FirstName: "Noel", LastName: "Nossn"},
			{ID: principalB, LeadID: leadB, FirstName: "Bo", LastName: "Baker", SSN: ptr(otherSSN)},
		},
		Merchants: []domain.Merchant{
			{ID: merchantA, PartnerID: partnerA, LeadID: &leadA, Name: "Merchant A"},
			{ID: merchantB, PartnerID: partnerB, Name: "Merchant B"},
		},
		MerchantDocuments: []domain.MerchantDocument{
			{ID: docA1, MerchantID: merchantA, FileName: "check.pdf", ContentType: "application/pdf", ContentBase64: []byte{0, 1, 2, 0xff, 0}},
			{ID: docA2, MerchantID: merchantA, FileName: "lease.pdf", ContentType: "application/pdf", ContentBase64: []byte("%PDF-1.4")},
			{ID: docB1, MerchantID: merchantB, FileName: "b.txt", ContentType: "text/plain", ContentBase64: []byte{}},
		},
		PricingModels: []domain.PricingModel{
			{ID: id(551), MerchantID: merchantA, Active: true, Type: "cash_discount", AdjustmentPercent: ptr("3.990")},
			{ID: id(552), MerchantID: merchantA, Active: false, Type: "standard"},
			{ID: id(553), MerchantID: merchantB, Active: true, Type: "surcharge", AdjustmentPercent: ptr("1.500")},
		},
		DeploymentModels: []domain.DeploymentModel{
			{ID: gatewayModel, Name: "Smart Terminal", EquipmentType: "terminal", Workflow: "gateway"},
			{ID: pinPadModel, Name: "Pin Pad", EquipmentType: "pin_pad", Workflow: "terminal"},
		},
		DeploymentOrders: []domain.DeploymentOrder{{ID: orderA, MerchantID: merchantA}, {ID: orderB, MerchantID: merchantB}},
		InventoryUnits: []domain.InventoryUnit{{ID: unitA, DeploymentModelID: gatewayModel, SerialNumber: "SN-1", Condition: "new",
			Status: "assigned", ReceivedDate: now.AddDate(0, 0, -10), Stamps: stamps}},
		Equipment: []domain.Equipment{
			{ID: equipmentA, EntityID: leadA, EntityType: "lead", DeploymentModelID: gatewayModel, InventoryUnitID: &unitA,
				VendorTerminalID: ptr("TID/1 A"), VarsheetID: &varsheetA, Status: "active", DeployedDate: ptr(now.AddDate(0, 0, -2)), Stamps: stamps},
			{ID: equipmentLoose, EntityID: leadB, EntityType: "lead", DeploymentModelID: pinPadModel, Status: "provisioning", Stamps: stamps},
		},
		Varsheets: []domain.Varsheet{{ID: varsheetA, EntityID: leadA, EntityType: "lead", MidID: id(3001), VNumber: "V1",
			TerminalIDNumber: ptr("7000001"), Agent: ptr("0001"), MerchantNumber: ptr("4445550001"), CurrencyCode: ptr("840"),
			TimeZoneCode: ptr("708"), FcsNumber: ptr("FCS"), AmexOptBlue: ptr(false), PinDebit: ptr(true), EBTFoodStamps: ptr(true), Stamps: stamps}},
		LineItems: []domain.LineItem{
			{ID: itemA, OrderID: orderA, OrderType: "gateway", DeploymentModelID: gatewayModel, ConnectionType: []string{"ip", "wifi"},
				Status: "deployed", InventoryUnitID: &unitA, EquipmentID: &equipmentA, VarsheetID: &varsheetA, Stamps: stamps},
			{ID: itemB, OrderID: orderB, OrderType: "sale", DeploymentModelID: pinPadModel, Status: "pending", Stamps: stamps},
		},
		Shipments: []dataset.Shipment{{LineItemID: itemA, Shipment: domain.Shipment{ID: id(1301), Status: "delivered",
			CarrierCode: ptr("ups"), TrackingNumber: ptr("1Z999"), ShippedDate: ptr(now.AddDate(0, 0, -5))}}},
		FileBuilds:    []domain.FileBuild{{ID: id(1401), LineItemID: itemA, Settings: settings}},
		MerchantNotes: []domain.MerchantNote{{ID: id(1501), MerchantID: merchantA, Body: "boarded", CreatedAt: now.Add(-time.Hour), CreatedBy: staffUser}},
		AuditEvents: []domain.AuditEvent{{ID: id(1601), At: now.Add(-time.Hour), ActorUserID: staffUser, Action: "principal.decrypt",
			TargetID: string(principalA), Outcome: domain.OutcomeGranted, Detail: "field ssn"}},
	}
	// One log on each kind of entity, and a run on lead A with tied dates to exercise the id
	// tie-break.
	for i, entity := range []domain.ID{leadA, merchantA, orderA, itemA, equipmentA, equipmentLoose} {
		ds.SAMActionLogs = append(ds.SAMActionLogs, samLog(5000+i, entity, now.Add(-time.Duration(i)*time.Minute)))
	}
	for i := range 6 {
		ds.SAMActionLogs = append(ds.SAMActionLogs, samLog(5100+i, leadA, now.Add(-time.Duration(i/2)*time.Hour)))
	}
	return ds
}

func samLog(n int, entity domain.ID, at time.Time) domain.SAMActionLog {
	return domain.SAMActionLog{ID: id(n), EntityID: entity, Action: "update_mid", ActionDate: at, SamID: int64(n)}
}

// asExported is what an export of ds alone gives back: no credentials, SSNs only with a ring,
// SAM logs by entity and list order, notes and audit events by time then id.
func asExported(ds *dataset.Dataset, withSSNs bool) *dataset.Dataset {
	out := *ds
	out.APIKeys, out.Sessions = nil, nil
	out.Principals = slices.Clone(ds.Principals)
	if !withSSNs {
		for i := range out.Principals {
			out.Principals[i].SSN = nil
		}
	}
	out.SAMActionLogs = slices.Clone(ds.SAMActionLogs)
	slices.SortFunc(out.SAMActionLogs, func(a, b domain.SAMActionLog) int {
		return cmp.Or(cmp.Compare(a.EntityID, b.EntityID), listOrder(a, b))
	})
	out.MerchantNotes = slices.Clone(ds.MerchantNotes)
	slices.SortFunc(out.MerchantNotes, func(a, b domain.MerchantNote) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	// Imported without their place in the audit chain, events are chained in file order under the
	// test key; their links are checked by verifying the chain, not here (see ignoreLinks).
	out.AuditEvents = slices.Clone(ds.AuditEvents)
	for i := range out.AuditEvents {
		if out.AuditEvents[i].Seq == 0 {
			out.AuditEvents[i].Seq, out.AuditEvents[i].ChainKeyID = int64(i+1), testdb.DefaultKeyID
		}
	}
	return &out
}

// ignoreLinks leaves audit events' links out of a comparison with a fixture, which cannot know them.
var ignoreLinks = cmpopts.IgnoreFields(domain.AuditEvent{}, "Hash")

// listOrder is the contract's order of SAM action logs: actionDate descending, then id
// descending.
func listOrder(a, b domain.SAMActionLog) int {
	return cmp.Or(b.ActionDate.Compare(a.ActionDate), cmp.Compare(b.ID, a.ID))
}
func ptr[T any](v T) *T { return &v }
