package dataset_test

// import --upsert and the deletes key, on SQLite and on PostgreSQL when
// BACKOFFICE_TEST_POSTGRES_URL is set.

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

var upsert = dataset.Options{Upsert: true}

// viaFile writes ds as a file and reads it back, as the command does: the file's own checks run.
func viaFile(t *testing.T, ds *dataset.Dataset) (*dataset.Dataset, error) {
	t.Helper()
	var buf bytes.Buffer
	if err := dataset.Write(&buf, ds); err != nil {
		t.Fatal(err)
	}
	return dataset.Read(&buf)
}

// mustUpsert upserts ds through a file and returns the counts.
func mustUpsert(t *testing.T, st *store.Store, ds *dataset.Dataset) dataset.Counts {
	t.Helper()
	read, err := viaFile(t, ds)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	c, err := dataset.ImportWith(ctx, st, read, testdb.Ring(t), upsert)
	if err != nil {
		t.Fatalf("upsert: %v", err)
	}
	return c
}

// upsertError upserts ds and returns the error, which must name the record; the database must
// be as it was.
func upsertError(t *testing.T, st *store.Store, ds *dataset.Dataset) string {
	t.Helper()
	before := testdb.Export(t, st, testdb.Ring(t))
	read, err := viaFile(t, ds)
	if err == nil {
		_, err = dataset.ImportWith(ctx, st, read, testdb.Ring(t), upsert)
	}
	if err == nil {
		t.Fatal("upsert succeeded, want an error")
	}
	if diff := cmp.Diff(before, testdb.Export(t, st, testdb.Ring(t))); diff != "" {
		t.Errorf("a failed upsert changed the database (-before +after):\n%s", diff)
	}
	e := datasetError(t, err)
	return (&dataset.Error{Path: e.Path, Problem: e.Problem}).Error() // the place in the file aside
}

// A record whose id is stored is replaced whole, parts included (a lead's card plans, a
// principal's SSN); a new id is added; the counts say which.
func TestUpsertReplacesAndAdds(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		want := fixture()
		want.Varsheets[0].VNumber = "V2"
		want.Varsheets[0].TerminalIDNumber = nil
		want.Leads[0].ServiceAcceptance.SelectedCardPlanIDs = []domain.ID{planMC}
		want.Principals[0].SSN = ptr("555-55-5555")
		want.Principals[1].SSN = ptr("111-22-3333")
		newPartner := domain.Partner{ID: id(3), Name: "Partner C"}
		want.Partners = append(want.Partners, newPartner)
		// A replaced credential keeps working under its new secret.
		want.APIKeys[0].Key = "staff-key-rotated-IsikRNRm1ojd_zrU65aM1603YyZmUA1K9PvaYsbrgVg"

		c := mustUpsert(t, st, &dataset.Dataset{
			Partners: []domain.Partner{newPartner}, APIKeys: want.APIKeys[:1],
			Leads: want.Leads[:1], Principals: want.Principals[:2], Varsheets: want.Varsheets,
		})
		if c != (dataset.Counts{Added: 1, Replaced: 5}) {
			t.Errorf("counts = %+v, want 1 added, 5 replaced", c)
		}
		if diff := cmp.Diff(asExported(want, true), testdb.Export(t, st, testdb.Ring(t)), cmpopts.EquateEmpty(), ignoreLinks); diff != "" {
			t.Errorf("export after the upsert (-want +got):\n%s", diff)
		}
	})
}

// Plain import keeps its meaning: a stored id is a duplicate, and a deletes key is refused.
func TestPlainImportRefusesDeletes(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		_, err := dataset.Import(ctx, st, &dataset.Dataset{Deletes: map[string][]domain.ID{"varsheets": {varsheetA}}}, nil)
		if err == nil || datasetError(t, err).Error() != "deletes: deleting records needs import --upsert" {
			t.Errorf("error = %v, want the deletes key refused", err)
		}
		_, err = dataset.Import(ctx, st, &dataset.Dataset{Varsheets: fixture().Varsheets}, nil)
		if err == nil || !strings.Contains(err.Error(), "duplicate id") {
			t.Errorf("error = %v, want a duplicate", err)
		}
	})
}

// A merchant's active pricing model switches in one file, whatever the order of its records: the
// rule of one active model is held against the result.
func TestUpsertSwitchesActivePricingModel(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		dual := domain.PricingModel{ID: id(554), MerchantID: merchantA, Active: true, Type: "dual_pricing", AdjustmentPercent: ptr("4.000")}
		old := fixture().PricingModels[0]
		old.Active = false
		mustUpsert(t, st, &dataset.Dataset{PricingModels: []domain.PricingModel{dual, old}})
		got := testdb.Export(t, st, nil).PricingModels
		active := map[domain.ID]bool{}
		for _, m := range got {
			active[m.ID] = m.Active
		}
		if !active[dual.ID] || active[old.ID] {
			t.Errorf("active = %v, want %s active and %s not", active, dual.ID, old.ID)
		}

		// A second active model while the stored one stays active is refused, naming it.
		another := domain.PricingModel{ID: id(555), MerchantID: merchantA, Active: true, Type: "standard"}
		if got, want := upsertError(t, st, &dataset.Dataset{PricingModels: []domain.PricingModel{another}}),
			"pricingModels[0].active: merchant "+string(merchantA)+" already has an active pricing model"; got != want {
			t.Errorf("error = %s, want %s", got, want)
		}
	})
}

// What the service wrote is never replaced or deleted by an import; bad input names the record
// and field and leaves the database as it was.
func TestUpsertErrorsNameTheRecord(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		fx := fixture()
		note := fx.MerchantNotes[0]
		note.Body = "rewritten"
		event := fx.AuditEvents[0]
		event.Detail = "rewritten"
		badStatus := fx.LineItems[1]
		badStatus.Status = "lost"
		loose := fx.LineItems[1]
		loose.VarsheetID = ptr(id(1299))
		otherShipment := fx.Shipments[0]
		otherShipment.ID = id(1302) // a line item has one shipment
		cases := []struct {
			ds   *dataset.Dataset
			want string
		}{
			{&dataset.Dataset{MerchantNotes: []domain.MerchantNote{note}},
				"merchantNotes[0]: merchant notes are written by the service and cannot be replaced"},
			{&dataset.Dataset{AuditEvents: []domain.AuditEvent{event}},
				"auditEvents[0]: audit events are written by the service and cannot be replaced"},
			{&dataset.Dataset{Deletes: map[string][]domain.ID{"merchantNotes": {note.ID}}},
				"deletes.merchantNotes: merchant notes are written by the service and cannot be deleted"},
			{&dataset.Dataset{Deletes: map[string][]domain.ID{"auditEvents": {event.ID}}},
				"deletes.auditEvents: audit events are written by the service and cannot be deleted"},
			{&dataset.Dataset{LineItems: []domain.LineItem{badStatus}},
				`lineItems[0].status: must be one of pending, allocated, provisioned, shipped, delivered, deployed, returned, canceled, got "lost"`},
			{&dataset.Dataset{LineItems: []domain.LineItem{loose}},
				"lineItems[0].varsheetId: no VAR sheet with this id"},
			{&dataset.Dataset{Shipments: []dataset.Shipment{otherShipment}},
				"shipments[0].lineItemId: the same as another shipment's, already in the database: a line item has one shipment at most"},
			{&dataset.Dataset{Deletes: map[string][]domain.ID{"vars": {varsheetA}}},
				"deletes.vars: unknown key (known keys: " + knownKeys() + ")"},
			{&dataset.Dataset{Deletes: map[string][]domain.ID{"varsheets": {"nope"}}},
				`deletes.varsheets[0]: not a uuid: "nope"`},
			{&dataset.Dataset{Deletes: map[string][]domain.ID{"varsheets": {varsheetA, varsheetA}}},
				"deletes.varsheets[1]: " + string(varsheetA) + " listed twice"},
			{&dataset.Dataset{Varsheets: fx.Varsheets, Deletes: map[string][]domain.ID{"varsheets": {varsheetA}}},
				"deletes.varsheets[0]: " + string(varsheetA) + " is also a record of varsheets in this file: to replace the stored record, " +
					"leave its id out of deletes (import --upsert replaces a stored record whole with the file's); to delete it, leave the record out of varsheets"},
		}
		for _, c := range cases {
			if got := upsertError(t, st, c.ds); got != c.want {
				t.Errorf("error = %s\nwant    %s", got, c.want)
			}
		}
	})
}

func knownKeys() string {
	keys := []string{"partners", "users", "apiKeys", "sessions", "cardPlans", "leads", "principals", "merchants",
		"merchantDocuments", "pricingModels", "deploymentModels", "deploymentOrders", "inventoryUnits", "equipment",
		"varsheets", "lineItems", "shipments", "fileBuilds", "samActionLogs", "merchantNotes", "auditEvents"}
	return strings.Join(keys[:len(keys)-1], ", ") + " or " + keys[len(keys)-1]
}

// A delete is refused while a stored record refers to the record, naming the referrer, unless the
// same file changes or deletes the referrer; a delete of an id not stored is refused.
func TestUpsertDeletes(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		del := func(key string, ids ...domain.ID) map[string][]domain.ID { return map[string][]domain.ID{key: ids} }
		cases := []struct {
			ds   *dataset.Dataset
			want string
		}{
			{&dataset.Dataset{Deletes: del("varsheets", varsheetA)},
				"deletes.varsheets[0]: still used by equipment[" + string(equipmentA) + "].varsheetId"},
			{&dataset.Dataset{Deletes: map[string][]domain.ID{"varsheets": {varsheetA}, "equipment": {equipmentA}}},
				"deletes.equipment[0]: still used by lineItems[" + string(itemA) + "].equipmentId"},
			{&dataset.Dataset{Deletes: del("cardPlans", planAmex)},
				"deletes.cardPlans[0]: still used by leads[" + string(leadA) + "].serviceAcceptance.selectedCardPlanIds"},
			{&dataset.Dataset{Deletes: del("merchants", merchantB)},
				"deletes.merchants[0]: still used by merchantDocuments[" + string(docB1) + "].merchantId"},
			{&dataset.Dataset{Deletes: del("varsheets", id(1299))},
				"deletes.varsheets[0]: no VAR sheet with this id"},
			{&dataset.Dataset{Deletes: del("samActionLogs", id(5999))},
				"deletes.samActionLogs[0]: no SAM action log with this id"},
			// A record of the file may not name what the file deletes.
			{&dataset.Dataset{LineItems: fixture().LineItems[:1], Deletes: del("varsheets", varsheetA)},
				"lineItems[0].varsheetId: no VAR sheet with this id once deletes.varsheets[0] is deleted"},
		}
		for _, c := range cases {
			if got := upsertError(t, st, c.ds); got != c.want {
				t.Errorf("error = %s\nwant    %s", got, c.want)
			}
		}

		// The referrers change in the same file: the VAR sheet goes.
		fx := fixture()
		item, equip := fx.LineItems[0], fx.Equipment[0]
		item.VarsheetID, equip.VarsheetID = nil, nil
		c := mustUpsert(t, st, &dataset.Dataset{Equipment: []domain.Equipment{equip}, LineItems: []domain.LineItem{item},
			Deletes: del("varsheets", varsheetA)})
		if c != (dataset.Counts{Replaced: 2, Deleted: 1}) {
			t.Errorf("counts = %+v, want 2 replaced, 1 deleted", c)
		}
		// A lead goes with its principal, its card plans with it; a pricing model and a log go.
		c = mustUpsert(t, st, &dataset.Dataset{Deletes: map[string][]domain.ID{
			"leads": {leadNotSet}, "principals": {principalB}, "pricingModels": {id(552)}, "samActionLogs": {id(5102)}}})
		if c != (dataset.Counts{Deleted: 4}) {
			t.Errorf("counts = %+v, want 4 deleted", c)
		}
		got := testdb.Export(t, st, nil)
		want := asExported(fx, false)
		want.Varsheets = nil
		want.LineItems[0], want.Equipment[0] = item, equip
		want.Leads = slices.DeleteFunc(want.Leads, func(l domain.Lead) bool { return l.ID == leadNotSet })
		want.Principals = slices.DeleteFunc(want.Principals, func(p domain.Principal) bool { return p.ID == principalB })
		want.PricingModels = slices.DeleteFunc(want.PricingModels, func(m domain.PricingModel) bool { return m.ID == id(552) })
		want.SAMActionLogs = slices.DeleteFunc(want.SAMActionLogs, func(l domain.SAMActionLog) bool { return l.ID == id(5102) })
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty(), ignoreLinks); diff != "" {
			t.Errorf("export after the deletes (-want +got):\n%s", diff)
		}
		var leadALogs []domain.SAMActionLog
		for _, l := range want.SAMActionLogs {
			if l.EntityID == leadA {
				leadALogs = append(leadALogs, l)
			}
		}
		for size := int64(1); size <= 4; size++ {
			checkPages(t, st, leadA, leadALogs, size)
		}
	})
}

// A replaced SAM action log whose date moves it to another rank, or to another entity, is listed
// once, at its new place, on every page.
func TestUpsertSAMLogsKeepPagesExact(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		logs := fixture().SAMActionLogs
		moved := samLog(5103, leadA, fixtureNow.Add(time.Hour)) // was among the oldest
		toMerchant := samLog(5104, merchantA, fixtureNow.Add(-time.Hour))
		fresh := samLog(5200, leadA, fixtureNow.Add(-30*time.Hour))
		c := mustUpsert(t, st, &dataset.Dataset{SAMActionLogs: []domain.SAMActionLog{moved, toMerchant, fresh}})
		if c != (dataset.Counts{Added: 1, Replaced: 2}) {
			t.Errorf("counts = %+v, want 1 added, 2 replaced", c)
		}
		byEntity := map[domain.ID][]domain.SAMActionLog{}
		for _, l := range logs {
			switch l.ID {
			case moved.ID:
				l = moved
			case toMerchant.ID:
				l = toMerchant
			}
			byEntity[l.EntityID] = append(byEntity[l.EntityID], l)
		}
		byEntity[leadA] = append(byEntity[leadA], fresh)
		for _, entity := range []domain.ID{leadA, merchantA} {
			for size := int64(1); size <= 4; size++ {
				checkPages(t, st, entity, byEntity[entity], size)
			}
		}

		// Alone in its entity's import, a log that becomes the newest leaves its old place and its
		// bucket's count.
		newest := samLog(5101, leadA, fixtureNow.Add(2*time.Hour))
		mustUpsert(t, st, &dataset.Dataset{SAMActionLogs: []domain.SAMActionLog{newest}})
		for i, l := range byEntity[leadA] {
			if l.ID == newest.ID {
				byEntity[leadA][i] = newest
			}
		}
		for size := int64(1); size <= 4; size++ {
			checkPages(t, st, leadA, byEntity[leadA], size)
		}
	})
}

// A deleted document's content is gone from the database's files once the import has returned
// and the store is closed. (When the engine's purge runs is the engine's own test: closing the
// store checkpoints as well, so this one checks the outcome, not the purge's timing.)
func TestUpsertDeletePurgesContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "purge.db")
	st, err := store.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	st.SetChainSigner(testdb.Ring(t))
	secret := []byte("UNIQUE-IMPORTED-CONTENT-a41c07e9")
	fx := fixture()
	fx.MerchantDocuments[0].ContentBase64 = secret
	testdb.Import(t, st, fx)
	mustUpsert(t, st, &dataset.Dataset{Deletes: map[string][]domain.ID{"merchantDocuments": {docA1}}})
	st.Close()
	files, _ := filepath.Glob(path + "*")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, secret) {
			t.Errorf("%s still holds the deleted document's content", filepath.Base(f))
		}
	}
}

// A replaced API key takes the file's user, secret and expiry, and keeps what the file does not
// carry: a revoked key stays revoked under its new secret.
func TestUpsertKeepsARevocation(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		key := fixture().APIKeys[0]
		event := domain.AuditEvent{ID: id(1699), At: fixtureNow, ActorUserID: staffUser, Action: "apikey.revoke",
			TargetID: string(key.ID), Outcome: domain.OutcomeGranted}
		if err := st.RevokeAPIKey(ctx, key.ID, fixtureNow, event); err != nil {
			t.Fatal(err)
		}
		key.Key = "staff-key-after-revocation-7d_NvYn9BWZJJvrzuSYNowlrd8_bURQNpfnHWa0v4YU"
		mustUpsert(t, st, &dataset.Dataset{APIKeys: []domain.APIKey{key}})
		c, err := st.Credential(ctx, domain.CredentialAPIKey, secrets.HashCredential(domain.CredentialAPIKey, key.Key))
		if err != nil {
			t.Fatalf("the replaced key's new secret: %v", err)
		}
		if c.ID != key.ID || c.RevokedAt == nil {
			t.Errorf("replaced key %s: revoked at %v, want it still revoked", c.ID, c.RevokedAt)
		}
		if _, err := st.Credential(ctx, domain.CredentialAPIKey, secrets.HashCredential(domain.CredentialAPIKey, staffKey)); err == nil {
			t.Error("the replaced key's old secret still finds it")
		}
	})
}

// Progress is told as records go in, SAM logs batch by batch (a million of them are one call to
// the store), and ends at every record of the file.
func TestImportReportsProgress(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		ds := &dataset.Dataset{Partners: []domain.Partner{{ID: id(4), Name: "P"}}}
		for i := range 200 {
			ds.SAMActionLogs = append(ds.SAMActionLogs, samLog(6000+i, leadB, fixtureNow.Add(time.Duration(i)*time.Second)))
		}
		var seen []int
		opts := dataset.Options{Upsert: true, Progress: func(done int) { seen = append(seen, done) }}
		if _, err := dataset.ImportWith(ctx, st, ds, testdb.Ring(t), opts); err != nil {
			t.Fatal(err)
		}
		if len(seen) < 4 || seen[len(seen)-1] != ds.Records() || !slices.IsSorted(seen) {
			t.Errorf("progress %v, want several steps up to %d", seen, ds.Records())
		}
	})
}

// One id may not name records of two entity kinds (a lead and a merchant, say): a SAM log's
// entity is found by its id alone, and the page shown to whoever may see either. Refused, whether
// both are in the file or one is stored already, naming the file's record; nothing imported.
func TestEntityIDsAreDistinctAcrossKinds(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		before := testdb.Export(t, st, nil)
		merchant := fixture().Merchants[1] // partner B's
		merchant.ID = leadA                // partner A's lead's id
		_, err := dataset.Import(ctx, st, &dataset.Dataset{Merchants: []domain.Merchant{merchant}}, nil)
		if err == nil || !strings.Contains(err.Error(), "merchants[0].id: names both a lead and a merchant") {
			t.Fatalf("a merchant with a stored lead's id: %v, want it refused naming both", err)
		}
		lead := fixture().Leads[0]
		lead.ID = id(9001)
		merchant.ID = id(9001)
		_, err = dataset.Import(ctx, st, &dataset.Dataset{Leads: []domain.Lead{lead}, Merchants: []domain.Merchant{merchant}}, nil)
		if err == nil || !strings.Contains(err.Error(), "names both a lead and a merchant") {
			t.Fatalf("a lead and a merchant of one id in one file: %v, want it refused", err)
		}
		if diff := cmp.Diff(before, testdb.Export(t, st, nil)); diff != "" {
			t.Errorf("a refused import changed the database (-before +after):\n%s", diff)
		}
	})
}

// Equipment and VAR sheets belong to the partner of the line items that use them (a VAR sheet
// also through their equipment): an import after which line items of two partners use one is
// refused, naming the file's record that makes them, whether it is the line item, the equipment,
// or an order moved to another partner's merchant; nothing is imported. Inventory units belong to
// no partner: a unit on line items of two partners imports.
func TestLineItemsOfTwoPartnersShareNoEquipmentOrVarsheet(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		before := testdb.Export(t, st, nil)
		itemOfB := func(n int) domain.LineItem { // a new line item of partner B's order
			item := fixture().LineItems[1]
			item.ID = id(n)
			return item
		}
		withEquipment, withVarsheet, throughEquipment := itemOfB(1190), itemOfB(1190), itemOfB(1190)
		withEquipment.EquipmentID = ptr(equipmentA)
		withVarsheet.VarsheetID = ptr(varsheetA)
		equipment := fixture().Equipment[1] // on no line item, named by the new line item of B
		equipment.ID = id(1090)
		equipment.VarsheetID = ptr(varsheetA)
		throughEquipment.EquipmentID = ptr(equipment.ID)
		ofA, ofB := "line item "+string(itemA)+" (partner "+string(partnerA)+")", "line item "+string(id(1190))+" (partner "+string(partnerB)+")"
		const equipmentRule = ": equipment belongs to the partner of the line items it is on; give each partner's line items their own"
		const varsheetRule = ": a VAR sheet belongs to the partner of the line items that use it, directly or through their equipment; give each partner's line items their own"
		cases := []struct {
			ds   *dataset.Dataset
			want string
		}{
			{&dataset.Dataset{LineItems: []domain.LineItem{withEquipment}},
				"lineItems[0].equipmentId: equipment " + string(equipmentA) + " would be used by line items of two partners, " + ofA + " and " + ofB + equipmentRule},
			{&dataset.Dataset{LineItems: []domain.LineItem{withVarsheet}},
				"lineItems[0].varsheetId: VAR sheet " + string(varsheetA) + " would be used by line items of two partners, " + ofA + " and " + ofB + varsheetRule},
			{&dataset.Dataset{Equipment: []domain.Equipment{equipment}, LineItems: []domain.LineItem{throughEquipment}},
				"lineItems[0].equipmentId: VAR sheet " + string(varsheetA) + " would be used by line items of two partners, " + ofA + " and " +
					"line item " + string(id(1190)) + " (partner " + string(partnerB) + ", through equipment " + string(id(1090)) + ")" + varsheetRule},
		}
		for _, c := range cases {
			if _, err := dataset.Import(ctx, st, c.ds, nil); err == nil || datasetError(t, err).Error() != c.want {
				t.Errorf("import: %v\nwant    %s", err, c.want)
			}
			if got := upsertError(t, st, c.ds); got != c.want {
				t.Errorf("import --upsert: %s\nwant    %s", got, c.want)
			}
		}
		if diff := cmp.Diff(before, testdb.Export(t, st, nil)); diff != "" {
			t.Errorf("a refused import changed the database (-before +after):\n%s", diff)
		}

		// An order of partner A's whose line item uses A's equipment, moved to partner B's merchant.
		order := domain.DeploymentOrder{ID: id(890), MerchantID: merchantA}
		item := itemOfB(1191)
		item.OrderID, item.EquipmentID = order.ID, ptr(equipmentA)
		testdb.Import(t, st, &dataset.Dataset{DeploymentOrders: []domain.DeploymentOrder{order}, LineItems: []domain.LineItem{item}})
		order.MerchantID = merchantB
		want := "deploymentOrders[0].merchantId: equipment " + string(equipmentA) + " would be used by line items of two partners, " + ofA +
			" and line item " + string(item.ID) + " (partner " + string(partnerB) + ")" + equipmentRule
		if got := upsertError(t, st, &dataset.Dataset{DeploymentOrders: []domain.DeploymentOrder{order}}); got != want {
			t.Errorf("an order moved to another partner: %s\nwant    %s", got, want)
		}

		// Stock: partner B's line item may take a unit that partner A's line item names.
		unit := itemOfB(1192)
		unit.InventoryUnitID = ptr(testdb.UnitA)
		testdb.Import(t, st, &dataset.Dataset{LineItems: []domain.LineItem{unit}})
	})
}
