package testdb

import (
	"encoding/json"
	"fmt"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
)

// The store's and the dataset's tests share one fixture: a record of every kind, with fixed,
// readable ids and secrets.

// FixtureID makes the fixture's ids (valid version-4 uuids).
func FixtureID(n int) domain.ID { return domain.ID(fmt.Sprintf("00000000-0000-4000-8000-%012d", n)) }

// Credentials and secrets of the fixture: a readable name before 32 random bytes, strong by
// secrets.CheckCredential, as every imported credential must be.
const (
	StaffKey       = "staff-key-cr824-Q42iamtmFoM25nloon_kXxomjL-Wi5UhSw0eQ"
	PartnerKey     = "partner-key-aAywJdSBi4gYENG9EnloxUpLRah9iCGjL5IdF8qwZZM"
	ExpiredKey     = "expired-key-2KmRCEXrd9AtAO2w4Xt0xPxihjjA4biVT03oUIhVYKg"
	StaffSession   = "staff-session-qteRDxTz7qS6oXce5-ANm6IDZlJHaeRbNsEbNgDN1fk"
	ExpiredSession = "expired-session-7z1E5p2UFZMt2XR1R0o88b94rLN_2N1_xHL-7Q1cz6U"
	DisabledKey    = "disabled-user-key-4XhEPD6iN80J1KDycrZ_1ci9uKXRn1_2re0JGRExxA4"
	DisabledToken  = "disabled-user-session-keqLcFBu6tEBCpXd1EGKZgQtpOSNOMRUM3H463qtT8c"
	// DisabledExternalID is the external id of the disabled user.
	DisabledExternalID = "idp|disabled-user"
	PrincipalSSN       = "123-45-6789"
	OtherSSN           = "987-65-4321"
)

// Ids of the fixture's records.
const (
	PartnerA  domain.ID = "00000000-0000-4000-8000-000000000001"
	PartnerB  domain.ID = "00000000-0000-4000-8000-000000000002"
	StaffUser domain.ID = "00000000-0000-4000-8000-000000000101"
	UserA     domain.ID = "00000000-0000-4000-8000-000000000102"
	UserB     domain.ID = "00000000-0000-4000-8000-000000000103"
	// DisabledUser is a staff user with every permission, disabled.
	DisabledUser   domain.ID = "00000000-0000-4000-8000-000000000104"
	PlanVisa       domain.ID = "00000000-0000-4000-8000-000000000201"
	PlanMC         domain.ID = "00000000-0000-4000-8000-000000000202"
	PlanAmex       domain.ID = "00000000-0000-4000-8000-000000000203"
	LeadA          domain.ID = "00000000-0000-4000-8000-000000000301"
	LeadB          domain.ID = "00000000-0000-4000-8000-000000000302"
	LeadNotSet     domain.ID = "00000000-0000-4000-8000-000000000303"
	PrincipalA     domain.ID = "00000000-0000-4000-8000-000000000401"
	PrincipalNoSSN domain.ID = "00000000-0000-4000-8000-000000000402"
	PrincipalB     domain.ID = "00000000-0000-4000-8000-000000000403"
	MerchantA      domain.ID = "00000000-0000-4000-8000-000000000501"
	MerchantB      domain.ID = "00000000-0000-4000-8000-000000000502"
	DocA1          domain.ID = "00000000-0000-4000-8000-000000000601"
	DocA2          domain.ID = "00000000-0000-4000-8000-000000000602"
	DocB1          domain.ID = "00000000-0000-4000-8000-000000000603"
	GatewayModel   domain.ID = "00000000-0000-4000-8000-000000000701"
	PinPadModel    domain.ID = "00000000-0000-4000-8000-000000000702"
	OrderA         domain.ID = "00000000-0000-4000-8000-000000000801"
	OrderB         domain.ID = "00000000-0000-4000-8000-000000000802"
	UnitA          domain.ID = "00000000-0000-4000-8000-000000000901"
	EquipmentA     domain.ID = "00000000-0000-4000-8000-000000001001"
	EquipmentLoose domain.ID = "00000000-0000-4000-8000-000000001002"
	ItemA          domain.ID = "00000000-0000-4000-8000-000000001101"
	ItemB          domain.ID = "00000000-0000-4000-8000-000000001102"
	VarsheetA      domain.ID = "00000000-0000-4000-8000-000000001201"
)

// FixtureNow is the fixture's "now"; microsecond precision, as the store keeps times.
func FixtureNow() time.Time { return time.Date(2026, 11, 21, 9, 30, 0, 123456000, time.UTC) }

// fixtureSettings is a file build's settings, compact so that it comes back byte for byte.
const fixtureSettings = `{"tips":{"enabled":true,"presetsPercent":[15,20],"allowCustom":false},"tax":{"enabled":true,"ratePercent":"8.250"},"avs":{"enabled":true,"mode":"zip"},"receipt":{"merchantCopy":true,"customerCopy":"prompt","headerLines":["FIXTURE"],"footerLines":[]},"transactions":{"sale":true,"refund":true,"void":true,"preAuth":false,"manualEntry":false,"cashBack":false},"autoBatch":{"enabled":true,"time":"23:00"}}`

// Fixture holds a record of every kind, each section in id order (the export's order), with
// the cases the suite checks: two partners, expired credentials, a lead with and one without a
// stored acceptance, a principal without an SSN, equipment on no line item.
func Fixture() *dataset.Dataset {
	now := FixtureNow()
	stamps := domain.Stamps{CreatedAt: now.Add(-48 * time.Hour), CreatedBy: StaffUser, UpdatedAt: now, UpdatedBy: UserA}
	ds := &dataset.Dataset{
		Partners: []domain.Partner{{ID: PartnerA, Name: "Partner A"}, {ID: PartnerB, Name: "Partner B"}},
		Users: []domain.User{
			{ID: StaffUser, Email: "staff@example.com", Permissions: []domain.Permission{domain.PermAll}},
			{ID: UserA, PartnerID: ptr(PartnerA), Email: "a@example.com", Permissions: []domain.Permission{domain.PermReadSAMActionLogs, domain.PermDecryptPrincipals}},
			{ID: UserB, PartnerID: ptr(PartnerB), Email: "b@example.com", Permissions: []domain.Permission{}},
			{ID: DisabledUser, Email: "left@example.com", Permissions: []domain.Permission{domain.PermAll},
				ExternalID: ptr(DisabledExternalID), Disabled: true},
		},
		APIKeys: []domain.APIKey{
			{ID: FixtureID(111), UserID: StaffUser, Key: StaffKey},
			{ID: FixtureID(112), UserID: UserA, Key: PartnerKey, ExpiresAt: ptr(now.Add(24 * time.Hour))},
			{ID: FixtureID(113), UserID: StaffUser, Key: ExpiredKey, ExpiresAt: ptr(now.Add(-time.Hour))},
			{ID: FixtureID(114), UserID: DisabledUser, Key: DisabledKey},
		},
		Sessions: []domain.Session{
			{ID: FixtureID(121), UserID: StaffUser, Token: StaffSession, ExpiresAt: now.Add(time.Hour)},
			{ID: FixtureID(122), UserID: UserA, Token: ExpiredSession, ExpiresAt: now.Add(-time.Minute)},
			{ID: FixtureID(123), UserID: DisabledUser, Token: DisabledToken, ExpiresAt: now.Add(time.Hour)},
		},
		// Sort order differs from id order, so that the catalogue's order is seen to be sortOrder.
		CardPlans: []domain.CardPlan{
			{ID: PlanVisa, Code: "visa", DisplayName: "Visa", SortOrder: 2},
			{ID: PlanMC, Code: "mastercard", DisplayName: "Mastercard", SortOrder: 1},
			{ID: PlanAmex, Code: "amex", DisplayName: "American Express", SortOrder: 3},
		},
		Leads: []domain.Lead{
			{ID: LeadA, PartnerID: PartnerA, BusinessName: "Lead A", MidID: ptr(FixtureID(3001)),
				ServiceAcceptance: &domain.StoredAcceptance{Configured: true, SelectedCardPlanIDs: []domain.ID{PlanVisa, PlanAmex},
					EBTFcsNumber: ptr("1234567"), AmexProgram: ptr("opt_blue"), AmexEsaNumber: ptr("ESA-1"), EBTBenefitMode: ptr("both")}},
			{ID: LeadB, PartnerID: PartnerB, BusinessName: "Lead B"},
			{ID: LeadNotSet, PartnerID: PartnerA, BusinessName: "Stored but not configured", MidID: ptr(FixtureID(3003)),
				ServiceAcceptance: &domain.StoredAcceptance{Configured: false, SelectedCardPlanIDs: []domain.ID{}}},
		},
		Principals: []domain.Principal{
			{ID: PrincipalA, LeadID: LeadA, FirstName: "Dana", LastName: "Able", SSN: ptr(PrincipalSSN)},
			{ID: PrincipalNoSSN, LeadID: LeadA, FirstName: "Noel", LastName: "Nossn"},
			{ID: PrincipalB, LeadID: LeadB, FirstName: "Bo", LastName: "Baker", SSN: ptr(OtherSSN)},
		},
		Merchants: []domain.Merchant{
			{ID: MerchantA, PartnerID: PartnerA, LeadID: ptr(LeadA), Name: "Merchant A"},
			{ID: MerchantB, PartnerID: PartnerB, Name: "Merchant B"},
		},
		MerchantDocuments: []domain.MerchantDocument{
			{ID: DocA1, MerchantID: MerchantA, FileName: "check.pdf", ContentType: "application/pdf", ContentBase64: []byte{0, 1, 2, 0xff, 0}},
			{ID: DocA2, MerchantID: MerchantA, FileName: "lease.pdf", ContentType: "application/pdf", ContentBase64: []byte("%PDF-1.4")},
			{ID: DocB1, MerchantID: MerchantB, FileName: "b.txt", ContentType: "text/plain", ContentBase64: []byte{}},
		},
		PricingModels: []domain.PricingModel{
			{ID: FixtureID(551), MerchantID: MerchantA, Active: true, Type: "cash_discount", AdjustmentPercent: ptr("3.990")},
			{ID: FixtureID(552), MerchantID: MerchantA, Active: false, Type: "standard"},
			{ID: FixtureID(553), MerchantID: MerchantB, Active: true, Type: "surcharge", AdjustmentPercent: ptr("1.500")},
		},
		DeploymentModels: []domain.DeploymentModel{
			{ID: GatewayModel, Name: "Smart Terminal", EquipmentType: "terminal", Workflow: "gateway"},
			{ID: PinPadModel, Name: "Pin Pad", EquipmentType: "pin_pad", Workflow: "terminal"},
		},
		DeploymentOrders: []domain.DeploymentOrder{{ID: OrderA, MerchantID: MerchantA}, {ID: OrderB, MerchantID: MerchantB}},
		InventoryUnits: []domain.InventoryUnit{{ID: UnitA, DeploymentModelID: GatewayModel, SerialNumber: "SN-1", Condition: "new",
			Status: "assigned", ReceivedDate: now.AddDate(0, 0, -10), Stamps: stamps}},
		Equipment: []domain.Equipment{
			{ID: EquipmentA, EntityID: LeadA, EntityType: "lead", DeploymentModelID: GatewayModel, InventoryUnitID: ptr(UnitA),
				VendorTerminalID: ptr("TID/1 A"), VarsheetID: ptr(VarsheetA), Status: "active", DeployedDate: ptr(now.AddDate(0, 0, -2)), Stamps: stamps},
			{ID: EquipmentLoose, EntityID: LeadB, EntityType: "lead", DeploymentModelID: PinPadModel, Status: "provisioning", Stamps: stamps},
		},
		Varsheets: []domain.Varsheet{{ID: VarsheetA, EntityID: LeadA, EntityType: "lead", MidID: FixtureID(3001), VNumber: "V1",
			TerminalIDNumber: ptr("7000001"), Agent: ptr("0001"), MerchantNumber: ptr("4445550001"), CurrencyCode: ptr("840"),
			TimeZoneCode: ptr("708"), FcsNumber: ptr("FCS"), AmexOptBlue: ptr(false), PinDebit: ptr(true), EBTFoodStamps: ptr(true), Stamps: stamps}},
		LineItems: []domain.LineItem{
			{ID: ItemA, OrderID: OrderA, OrderType: "gateway", DeploymentModelID: GatewayModel, ConnectionType: []string{"ip", "wifi"},
				Status: "deployed", InventoryUnitID: ptr(UnitA), EquipmentID: ptr(EquipmentA), VarsheetID: ptr(VarsheetA), Stamps: stamps},
			{ID: ItemB, OrderID: OrderB, OrderType: "sale", DeploymentModelID: PinPadModel, Status: "pending", Stamps: stamps},
		},
		Shipments: []dataset.Shipment{{LineItemID: ItemA, Shipment: domain.Shipment{ID: FixtureID(1301), Status: "delivered",
			CarrierCode: ptr("ups"), TrackingNumber: ptr("1Z999"), ShippedDate: ptr(now.AddDate(0, 0, -5))}}},
		FileBuilds:    []domain.FileBuild{{ID: FixtureID(1401), LineItemID: ItemA, Settings: json.RawMessage(fixtureSettings)}},
		MerchantNotes: []domain.MerchantNote{{ID: FixtureID(1501), MerchantID: MerchantA, Body: "boarded", CreatedAt: now.Add(-time.Hour), CreatedBy: StaffUser}},
		AuditEvents: []domain.AuditEvent{{ID: FixtureID(1601), At: now.Add(-time.Hour), ActorUserID: StaffUser, Action: "principal.decrypt",
			TargetID: string(PrincipalA), Outcome: domain.OutcomeGranted, Detail: "field ssn"}},
	}
	// One log on each kind of entity, and a run on lead A with tied dates to exercise the id
	// tie-break.
	for i, entity := range []domain.ID{LeadA, MerchantA, OrderA, ItemA, EquipmentA, EquipmentLoose} {
		ds.SAMActionLogs = append(ds.SAMActionLogs, FixtureSAMLog(5000+i, entity, now.Add(-time.Duration(i)*time.Minute)))
	}
	for i := range 6 {
		ds.SAMActionLogs = append(ds.SAMActionLogs, FixtureSAMLog(5100+i, LeadA, now.Add(-time.Duration(i/2)*time.Hour)))
	}
	return ds
}

// FixtureSAMLog is a SAM action log of the fixture's shape.
func FixtureSAMLog(n int, entity domain.ID, at time.Time) domain.SAMActionLog {
	return domain.SAMActionLog{ID: FixtureID(n), EntityID: entity, Action: "update_mid", ActionDate: at, SamID: int64(n)}
}

func ptr[T any](v T) *T { return &v }
