package api_test

import (
	"encoding/json"
	"fmt"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
)

// id makes the fixture's readable ids.
func id(n int) domain.ID { return domain.ID(fmt.Sprintf("00000000-0000-4000-8000-%012d", n)) }

func ptr[T any](v T) *T { return &v }

// Credentials of the fixture's users.
const (
	staffKey      = "staff-key-0000000000000001"
	staffSession  = "staff-session-000000000001"
	expiredKey    = "expired-key-00000000000001"
	expiredToken  = "expired-session-0000000001"
	partnerAKey   = "partner-a-key-000000000001"
	noPermKey     = "no-perm-key-00000000000001"
	partnerBKey   = "partner-b-key-000000000001"
	principalSSN  = "123-45-6789"
	otherSSN      = "987-65-4321"
	samLogsOnLead = 250
)

var (
	partnerA, partnerB           = id(1), id(2)
	staffUser, userA, noPermUser = id(101), id(102), id(103)
	userB                        = id(104)

	leadA, leadUnconfigured, leadB = id(301), id(302), id(303)
	principalA, principalNoSSN     = id(401), id(402)
	principalB                     = id(403)
	merchantA, merchantNoPricing   = id(501), id(502)
	merchantB                      = id(503)
	docA1, docA2, docB1            = id(601), id(602), id(603)
	gatewayModel, terminalModel    = id(701), id(702)
	orderA, orderNoPricing, orderB = id(801), id(802), id(803)
	planVisa, planMC, planAmex     = id(201), id(202), id(203)

	// Line items of orderA, one per precondition of operation 4.1, and one that passes all.
	itemOK, itemCanceled, itemReturned, itemTerminal = id(1101), id(1102), id(1103), id(1104)
	itemNoEquipment, itemNoVendorID, itemNoVarsheet  = id(1105), id(1106), id(1107)
	itemNoFileBuild, itemNoPricing, itemB            = id(1108), id(1109), id(1110)
	// itemBare passes every precondition with no inventory unit and no shipment: its push answers
	// both embedded objects null.
	itemBare        = id(1111)
	orphanEquipment = id(1099)
)

var fixtureNow = time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)

var fileBuildSettings = json.RawMessage(`{
 "tips": {"enabled": true, "presetsPercent": [15, 20], "allowCustom": false},
 "tax": {"enabled": true, "ratePercent": "8.250"},
 "avs": {"enabled": true, "mode": "zip"},
 "receipt": {"merchantCopy": true, "customerCopy": "prompt", "headerLines": ["FIXTURE"], "footerLines": []},
 "transactions": {"sale": true, "refund": true, "void": true, "preAuth": false, "manualEntry": false, "cashBack": false},
 "autoBatch": {"enabled": true, "time": "23:00"}}`)

// fixture is a dataset with two partners and an object for every rule the tests check.
func fixture() *dataset.Dataset {
	st := domain.Stamps{CreatedAt: fixtureNow, CreatedBy: staffUser, UpdatedAt: fixtureNow, UpdatedBy: staffUser}
	all := []domain.Permission{domain.PermAll}
	ds := &dataset.Dataset{
		Partners: []domain.Partner{{ID: partnerA, Name: "Partner A"}, {ID: partnerB, Name: "Partner B"}},
		Users: []domain.User{
			{ID: staffUser, Email: "staff@example.com", Permissions: all},
			{ID: userA, PartnerID: &partnerA, Email: "a@example.com", Permissions: []domain.Permission{
				domain.PermPushDeviceParameters, domain.PermReadSAMActionLogs, domain.PermReadServiceAcceptance,
				domain.PermDecryptPrincipals, domain.PermDeleteMerchantDocuments}},
			{ID: noPermUser, PartnerID: &partnerA, Email: "none@example.com", Permissions: []domain.Permission{}},
			{ID: userB, PartnerID: &partnerB, Email: "b@example.com", Permissions: all},
		},
		APIKeys: []domain.APIKey{
			{ID: id(111), UserID: staffUser, Key: staffKey},
			{ID: id(112), UserID: staffUser, Key: expiredKey, ExpiresAt: ptr(fixtureNow.Add(-time.Hour))},
			{ID: id(113), UserID: userA, Key: partnerAKey, ExpiresAt: ptr(fixtureNow.AddDate(10, 0, 0))},
			{ID: id(114), UserID: noPermUser, Key: noPermKey},
			{ID: id(115), UserID: userB, Key: partnerBKey},
		},
		Sessions: []domain.Session{
			{ID: id(121), UserID: staffUser, Token: staffSession, ExpiresAt: fixtureNow.AddDate(10, 0, 0)},
			{ID: id(122), UserID: staffUser, Token: expiredToken, ExpiresAt: fixtureNow.Add(-time.Minute)},
		},
		// Out of sortOrder on purpose: the API sorts.
		CardPlans: []domain.CardPlan{
			{ID: planAmex, Code: "amex", DisplayName: "American Express", SortOrder: 3},
			{ID: planVisa, Code: "visa", DisplayName: "Visa", SortOrder: 1},
			{ID: planMC, Code: "mc", DisplayName: "Mastercard", SortOrder: 2},
		},
		Leads: []domain.Lead{
			{ID: leadA, PartnerID: partnerA, BusinessName: "Lead A", MidID: ptr(id(3001)),
				ServiceAcceptance: &domain.StoredAcceptance{Configured: true, SelectedCardPlanIDs: []domain.ID{planVisa, planAmex},
					EBTFcsNumber: ptr("FCS1"), AmexProgram: ptr("esa"), AmexEsaNumber: ptr("ESA9"), EBTBenefitMode: ptr("food_stamps_only")}},
			{ID: leadUnconfigured, PartnerID: partnerA, BusinessName: "Lead without acceptance"},
			{ID: leadB, PartnerID: partnerB, BusinessName: "Lead B", MidID: ptr(id(3002))},
		},
		Principals: []domain.Principal{
			{ID: principalA, LeadID: leadA, FirstName: "Ann", LastName: "A", SSN: ptr(principalSSN)},
			{ID: principalNoSSN, LeadID: leadA, FirstName: "Nia", LastName: "None"},
			{ID: principalB, LeadID: leadB, FirstName: "Bo", LastName: "B", SSN: ptr(otherSSN)},
		},
		Merchants: []domain.Merchant{
			{ID: merchantA, PartnerID: partnerA, LeadID: &leadA, Name: "Merchant A"},
			{ID: merchantNoPricing, PartnerID: partnerA, Name: "Merchant without pricing"},
			{ID: merchantB, PartnerID: partnerB, LeadID: &leadB, Name: "Merchant B"},
		},
		MerchantDocuments: []domain.MerchantDocument{
			{ID: docA1, MerchantID: merchantA, FileName: "a1.pdf", ContentType: "application/pdf", ContentBase64: []byte("document A1 content")},
			{ID: docA2, MerchantID: merchantA, FileName: "a2.pdf", ContentType: "application/pdf", ContentBase64: []byte("document A2 content")},
			{ID: docB1, MerchantID: merchantB, FileName: "b1.pdf", ContentType: "application/pdf", ContentBase64: []byte("document B1 content")},
		},
		PricingModels: []domain.PricingModel{
			{ID: id(551), MerchantID: merchantA, Active: true, Type: "surcharge", AdjustmentPercent: ptr("3.000")},
			{ID: id(552), MerchantID: merchantA, Active: false, Type: "standard"},
			{ID: id(553), MerchantID: merchantNoPricing, Active: false, Type: "standard"},
			{ID: id(554), MerchantID: merchantB, Active: true, Type: "standard"},
		},
		DeploymentModels: []domain.DeploymentModel{
			{ID: gatewayModel, Name: "Gateway Terminal", EquipmentType: "terminal", Workflow: "gateway"},
			{ID: terminalModel, Name: "Classic Terminal", EquipmentType: "terminal", Workflow: "terminal"},
		},
		DeploymentOrders: []domain.DeploymentOrder{
			{ID: orderA, MerchantID: merchantA}, {ID: orderNoPricing, MerchantID: merchantNoPricing}, {ID: orderB, MerchantID: merchantB},
		},
		InventoryUnits: []domain.InventoryUnit{{ID: id(901), DeploymentModelID: gatewayModel, SerialNumber: "SN-1", Condition: "new",
			Status: "assigned", ReceivedDate: fixtureNow.AddDate(0, 0, -3), Stamps: st}},
		// A VAR sheet belongs to the partner of the line items that use it: each partner has its own.
		Varsheets: []domain.Varsheet{{ID: id(1201), EntityID: leadA, EntityType: "lead", MidID: id(3001), VNumber: "V1",
			TerminalIDNumber: ptr("T1"), MerchantNumber: ptr("M1"), PinDebit: ptr(true), EBTFoodStamps: ptr(false), Stamps: st},
			{ID: id(1202), EntityID: leadB, EntityType: "lead", MidID: id(3002), VNumber: "V2",
				TerminalIDNumber: ptr("T2"), MerchantNumber: ptr("M2"), PinDebit: ptr(true), EBTFoodStamps: ptr(false), Stamps: st}},
	}
	// Each line item gets its own equipment, so one precondition fails at a time.
	type item struct {
		id, order, model domain.ID
		status           string
		equipment        bool
		vendorID         *string
		varsheet         bool
		fileBuild        bool
	}
	items := []item{
		{itemOK, orderA, gatewayModel, "deployed", true, ptr("TID/1 ?#%"), true, true},
		{itemCanceled, orderA, terminalModel, "canceled", false, nil, false, false}, // also fails every later check
		{itemReturned, orderA, gatewayModel, "returned", true, ptr("TID-R"), true, true},
		{itemTerminal, orderA, terminalModel, "deployed", true, ptr("TID-T"), true, true},
		{itemNoEquipment, orderA, gatewayModel, "provisioned", false, nil, false, false},
		{itemNoVendorID, orderA, gatewayModel, "provisioned", true, nil, false, false},
		{itemNoVarsheet, orderA, gatewayModel, "provisioned", true, ptr("TID-V"), false, false},
		{itemNoFileBuild, orderA, gatewayModel, "provisioned", true, ptr("TID-F"), true, false},
		{itemNoPricing, orderNoPricing, gatewayModel, "provisioned", true, ptr("TID-P"), true, true},
		{itemB, orderB, gatewayModel, "deployed", true, ptr("TID-B"), true, true},
		{itemBare, orderA, gatewayModel, "deployed", true, ptr("TID-N"), true, true},
	}
	for n, it := range items {
		li := domain.LineItem{ID: it.id, OrderID: it.order, OrderType: "gateway", DeploymentModelID: it.model, Status: it.status, Stamps: st}
		if it.equipment {
			eq := id(1000 + n)
			ds.Equipment = append(ds.Equipment, domain.Equipment{ID: eq, EntityID: leadA, EntityType: "lead", DeploymentModelID: it.model,
				VendorTerminalID: it.vendorID, Status: "active", Stamps: st})
			li.EquipmentID = &eq
		}
		if it.varsheet {
			li.VarsheetID = ptr(id(1201))
			if it.order == orderB {
				li.VarsheetID = ptr(id(1202))
			}
		}
		if it.fileBuild {
			ds.FileBuilds = append(ds.FileBuilds, domain.FileBuild{ID: id(1400 + n), LineItemID: it.id, Settings: fileBuildSettings})
		}
		ds.LineItems = append(ds.LineItems, li)
	}
	ds.LineItems[0].InventoryUnitID = ptr(id(901))
	ds.LineItems[0].ConnectionType = []string{"ip"}
	ds.Shipments = []dataset.Shipment{{LineItemID: itemOK, Shipment: domain.Shipment{ID: id(1301), Status: "delivered"}}}
	ds.Equipment = append(ds.Equipment, domain.Equipment{ID: orphanEquipment, EntityID: leadA, EntityType: "lead",
		DeploymentModelID: gatewayModel, Status: "inactive", Stamps: st})
	// SAM logs: several share a date, so the id tie-break matters.
	for i := range samLogsOnLead {
		ds.SAMActionLogs = append(ds.SAMActionLogs, domain.SAMActionLog{ID: id(100000 + i*7919%samLogsOnLead), EntityID: leadA,
			Action: "add_equipment_purchase_fail", ActionDate: fixtureNow.Add(-time.Duration(i/3) * time.Minute), SamID: int64(i)})
	}
	for i, e := range []domain.ID{merchantA, orderA, itemOK, id(1000), leadB} {
		ds.SAMActionLogs = append(ds.SAMActionLogs, domain.SAMActionLog{ID: id(200000 + i), EntityID: e, Action: "board", ActionDate: fixtureNow, SamID: 1})
	}
	return ds
}
