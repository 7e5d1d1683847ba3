package dataset_test

// The import and export, on SQLite and on PostgreSQL when BACKOFFICE_TEST_POSTGRES_URL is set,
// each on a fresh database.

import (
	"context"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"backoffice/internal/auditlog"
	"backoffice/internal/auth"
	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

var ctx = context.Background()

// datasetError returns the *dataset.Error that err must be.
func datasetError(t *testing.T, err error) *dataset.Error {
	t.Helper()
	var de *dataset.Error
	if !errors.As(err, &de) {
		t.Fatalf("error = %v, want a *dataset.Error naming the record", err)
	}
	return de
}

// TestImportExportRoundTrip imports a record of every kind, exports it back as it went in, and
// moves it to a fresh store through the export: the second export is identical to the first.
func TestImportExportRoundTrip(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		in := fixture()
		n, err := dataset.Import(ctx, st, in, testdb.Ring(t))
		if err != nil {
			t.Fatal(err)
		}
		if n < 40 {
			t.Errorf("imported %d records, want every record of the fixture", n)
		}
		ring := testdb.Ring(t)
		first := testdb.Export(t, st, ring)
		if diff := cmp.Diff(asExported(in, true), first, cmpopts.EquateEmpty(), ignoreLinks); diff != "" {
			t.Errorf("export after import (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(asExported(in, false), testdb.Export(t, st, nil), cmpopts.EquateEmpty(), ignoreLinks); diff != "" {
			t.Errorf("export without secrets (-want +got):\n%s", diff)
		}

		fresh := testdb.Open(t, st.Engine())
		testdb.Import(t, fresh, first)
		if diff := cmp.Diff(first, testdb.Export(t, fresh, ring)); diff != "" {
			t.Errorf("export of the re-imported export (-first +second):\n%s", diff)
		}
		// The export carried the audit chain: the copy verifies as it is, up to the same head.
		head, _ := hex.DecodeString(first.AuditEvents[len(first.AuditEvents)-1].Hash)
		rep, err := fresh.VerifyAuditChain(ctx, ring, []auditlog.ChainExpect{{Link: head}})
		if err != nil || rep.Break != nil || rep.Events != int64(len(in.AuditEvents)) {
			t.Fatalf("verify the imported export: %+v %v %v", rep, rep.Break, err)
		}
	})
}

// TestImportIsAllOrNothing fails on the very last record of a file: nothing of it may remain.
func TestImportIsAllOrNothing(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		base := &dataset.Dataset{AuditEvents: []domain.AuditEvent{{ID: id(9001), At: fixtureNow, ActorUserID: staffUser,
			Action: "merchant_document.delete", TargetID: string(docA1), Outcome: domain.OutcomeNotFound, Detail: "before"}}}
		testdb.Import(t, st, base)
		before := testdb.Export(t, st, nil)

		ds := fixture()
		ds.AuditEvents = append(ds.AuditEvents, base.AuditEvents[0]) // the last record: a duplicate
		_, err := dataset.Import(ctx, st, ds, testdb.Ring(t))
		de := datasetError(t, err)
		if want := "auditEvents[1].id"; de.Path != want {
			t.Errorf("error path = %q, want %q (%v)", de.Path, want, err)
		}
		if diff := cmp.Diff(before, testdb.Export(t, st, nil)); diff != "" {
			t.Errorf("the failed import changed the database (-before +after):\n%s", diff)
		}
		if _, err := auth.New(st, time.Now).Verify(ctx, auth.NewAttempt("Api-Key "+staffKey)); !auth.Failed(err) {
			t.Errorf("a credential of the failed import authenticates: %v", err)
		}
	})
}

func TestImportRejectsDuplicates(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		t.Run("in the file", func(t *testing.T) {
			_, err := dataset.Read(strings.NewReader(`{"partners": [
				{"id": "` + string(partnerA) + `", "name": "A"},
				{"id": "` + strings.ToUpper(string(partnerA)) + `", "name": "A again, in capitals"}]}`))
			if de := datasetError(t, err); de.Path != "partners[1].id" || !strings.Contains(de.Problem, "duplicate") {
				t.Errorf("error = %v, want partners[1].id: duplicate …", err)
			}
		})
		t.Run("already in the database", func(t *testing.T) {
			testdb.Import(t, st, fixture())
			again := &dataset.Dataset{Merchants: []domain.Merchant{
				{ID: id(599), PartnerID: partnerA, Name: "new"},
				{ID: merchantB, PartnerID: partnerB, Name: "Merchant B again"},
			}}
			_, err := dataset.Import(ctx, st, again, testdb.Ring(t))
			de := datasetError(t, err)
			if de.Path != "merchants[1].id" || !strings.Contains(de.Problem, "already in the database") {
				t.Errorf("error = %v, want merchants[1].id: duplicate … already in the database", err)
			}
			if _, _, visible, _ := st.ListVisibleSAMActionLogs(ctx, domain.Scope{}, id(599), 1, 1); visible {
				t.Error("the record before the duplicate was kept")
			}
		})
		// SAM action logs go in batches; a duplicate is still named by its own path.
		t.Run("a SAM action log already in the database", func(t *testing.T) {
			ds := &dataset.Dataset{}
			for i := range 600 {
				ds.SAMActionLogs = append(ds.SAMActionLogs, samLog(30000+i, merchantB, fixtureNow))
			}
			ds.SAMActionLogs[550].ID = id(5003)
			_, err := dataset.Import(ctx, st, ds, nil)
			if de := datasetError(t, err); de.Path != "samActionLogs[550].id" || !strings.Contains(de.Problem, "already in the database") {
				t.Errorf("error = %v, want samActionLogs[550].id: duplicate … already in the database", err)
			}
			if _, total, _ := listSAMActionLogs(st, merchantB, 1, 1); total != 0 {
				t.Errorf("%d logs of the failed import were kept", total)
			}
		})
		t.Run("a SAM action log twice in one file", func(t *testing.T) {
			ds := &dataset.Dataset{SAMActionLogs: []domain.SAMActionLog{
				samLog(31000, merchantB, fixtureNow), samLog(31001, merchantB, fixtureNow), samLog(31000, merchantB, fixtureNow)}}
			_, err := dataset.Import(ctx, st, ds, nil)
			if de := datasetError(t, err); de.Path != "samActionLogs[2].id" {
				t.Errorf("error = %v, want samActionLogs[2].id: duplicate …", err)
			}
		})
	})
}

// TestImportReferences: a reference may point forward in the file, or to a record an earlier
// import added; one that points nowhere is named by its path.
func TestImportReferences(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		// Every section in reverse: each merchant's lead, each line item's order, comes later.
		ds := fixture()
		reverseAll(ds)
		testdb.Import(t, st, ds)

		later := &dataset.Dataset{
			DeploymentOrders: []domain.DeploymentOrder{{ID: id(899), MerchantID: merchantA}},
			SAMActionLogs:    []domain.SAMActionLog{samLog(5900, itemB, fixtureNow), samLog(5901, id(899), fixtureNow)},
			MerchantNotes:    []domain.MerchantNote{{ID: id(1599), MerchantID: merchantB, Body: "later", CreatedAt: fixtureNow, CreatedBy: staffUser}},
		}
		testdb.Import(t, st, later)
		if logs, total, err := listSAMActionLogs(st, id(899), 1, 10); err != nil || total != 1 || len(logs) != 1 {
			t.Errorf("logs of the new order = %v, %d, %v", logs, total, err)
		}

		dangling := []struct {
			ds   *dataset.Dataset
			path string
		}{
			{&dataset.Dataset{DeploymentOrders: []domain.DeploymentOrder{{ID: id(898), MerchantID: id(598)}}}, "deploymentOrders[0].merchantId"},
			{&dataset.Dataset{SAMActionLogs: []domain.SAMActionLog{samLog(5902, leadA, fixtureNow), samLog(5903, id(597), fixtureNow)}}, "samActionLogs[1].entityId"},
			{&dataset.Dataset{Leads: []domain.Lead{{ID: id(398), PartnerID: partnerA, BusinessName: "x",
				ServiceAcceptance: &domain.StoredAcceptance{SelectedCardPlanIDs: []domain.ID{planMC, id(298)}}}}}, "leads[0].serviceAcceptance.selectedCardPlanIds[1]"},
		}
		for _, c := range dangling {
			_, err := dataset.Import(ctx, st, c.ds, testdb.Ring(t))
			if de := datasetError(t, err); de.Path != c.path {
				t.Errorf("error = %v, want one at %s", err, c.path)
			}
		}
	})
}

func reverseAll(ds *dataset.Dataset) {
	slices.Reverse(ds.Leads)
	slices.Reverse(ds.Merchants)
	slices.Reverse(ds.DeploymentOrders)
	slices.Reverse(ds.Equipment)
	slices.Reverse(ds.LineItems)
	slices.Reverse(ds.SAMActionLogs)
	slices.Reverse(ds.Principals)
}

// TestConcurrentImportsKeepPositions runs two imports of logs of one entity at once: they must
// not both count the entity's logs from its state before either (counts lost).
func TestConcurrentImportsKeepPositions(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		files := make([]*dataset.Dataset, 2)
		var all []domain.SAMActionLog
		for f := range files {
			files[f] = &dataset.Dataset{}
			for i := range 300 {
				l := samLog(40000+f*1000+i, merchantB, fixtureNow.Add(-time.Duration(i*2+f)*time.Minute))
				files[f].SAMActionLogs = append(files[f].SAMActionLogs, l)
				all = append(all, l)
			}
		}
		errs := make([]error, len(files))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for f, ds := range files {
			wg.Go(func() {
				<-start
				_, errs[f] = dataset.Import(ctx, st, ds, nil)
			})
		}
		close(start)
		wg.Wait()
		for f, err := range errs {
			if err != nil {
				t.Fatalf("import %d: %v", f, err)
			}
		}
		checkPages(t, st, merchantB, all, 50)
	})
}

// A record refused for a value that another record holds in a unique field (an API key's or
// session's secret, a user's external id, a line item's one shipment or file build) is named at
// that field, with the record that holds it: an earlier one of the file, or a stored one.
func TestImportConflictsNameTheField(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		const fresh = "fresh-key-Vb7Qw2Lm9Xp4Rt8Zy6Bn3Cd5Fg0JsKe"
		key := func(n int, secret string) domain.APIKey {
			return domain.APIKey{ID: id(n), UserID: staffUser, Key: secret}
		}
		twoKeys := &dataset.Dataset{APIKeys: []domain.APIKey{key(191, fresh), key(192, fresh)}}
		storedKey := &dataset.Dataset{APIKeys: []domain.APIKey{key(193, fresh), key(194, staffKey)}}
		session := &dataset.Dataset{Sessions: []domain.Session{{ID: id(195), UserID: staffUser, Token: staffSession, ExpiresAt: fixtureNow.Add(time.Hour)}}}
		external := &dataset.Dataset{Users: []domain.User{{ID: id(196), Email: "x@example.com", Permissions: []domain.Permission{},
			ExternalID: ptr(testdb.DisabledExternalID)}}}
		shipment := fixture().Shipments[0]
		shipment.ID = id(1302)
		second := &dataset.Dataset{Shipments: []dataset.Shipment{shipment}}
		plain := []struct {
			ds   *dataset.Dataset
			want string
		}{
			{twoKeys, "apiKeys[1].key: the same as apiKeys[0].key: two API keys may not have the same key"},
			{storedKey, "apiKeys[1].key: the same as API key " + string(id(111)) + "'s, already in the database: two API keys may not have the same key"},
			{session, "sessions[0].token: the same as session " + string(id(121)) + "'s, already in the database: two sessions may not have the same token"},
			{external, "users[0].externalId: the same as user " + string(testdb.DisabledUser) + "'s, already in the database: two users may not have the same external id"},
			{second, "shipments[0].lineItemId: the same as shipment " + string(id(1301)) + "'s, already in the database: a line item has one shipment at most"},
		}
		for _, c := range plain {
			_, err := dataset.Import(ctx, st, c.ds, testdb.Ring(t))
			if err == nil || datasetError(t, err).Error() != c.want {
				t.Errorf("import: %v\nwant    %s", err, c.want)
			}
		}
		// With --upsert a refused row ends what the transaction can ask (PostgreSQL), so a stored
		// holder is not named by its id.
		for _, c := range []struct {
			ds   *dataset.Dataset
			want string
		}{
			{twoKeys, "apiKeys[1].key: the same as apiKeys[0].key: two API keys may not have the same key"},
			{storedKey, "apiKeys[1].key: the same as another API key's, already in the database: two API keys may not have the same key"},
			{second, "shipments[0].lineItemId: the same as another shipment's, already in the database: a line item has one shipment at most"},
		} {
			if got := upsertError(t, st, c.ds); got != c.want {
				t.Errorf("import --upsert: %s\nwant    %s", got, c.want)
			}
		}
	})
}

// checkPages walks every page of size, one past the end, and compares each with the expected
// slice of want in list order.
func checkPages(t *testing.T, st *store.Store, entity domain.ID, want []domain.SAMActionLog, size int64) {
	t.Helper()
	want = slices.Clone(want)
	slices.SortFunc(want, listOrder)
	pages := (int64(len(want)) + size - 1) / size
	for page := int64(1); page <= pages+1; page++ {
		got, total, err := listSAMActionLogs(st, entity, page, size)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if total != int64(len(want)) {
			t.Errorf("page %d: total = %d, want %d", page, total, len(want))
		}
		from, to := min((page-1)*size, int64(len(want))), min(page*size, int64(len(want)))
		if diff := cmp.Diff(want[from:to], got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("page %d of size %d (-want +got):\n%s", page, size, diff)
		}
	}
}

// Each problem an import finds in the database is named by the record and field, in the words
// the command prints.
func TestImportErrorsNameTheField(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		cases := []struct {
			ds   *dataset.Dataset
			ring *secrets.Ring
			want string
		}{
			{&dataset.Dataset{LineItems: []domain.LineItem{{ID: id(1199), OrderID: id(898), OrderType: "sale",
				DeploymentModelID: pinPadModel, Status: "pending"}}}, nil,
				"lineItems[0].orderId: no deployment order with this id"},
			{&dataset.Dataset{SAMActionLogs: []domain.SAMActionLog{samLog(5990, id(597), fixtureNow)}}, nil,
				"samActionLogs[0].entityId: no lead, merchant, deployment order, line item or equipment with this id"},
			{&dataset.Dataset{SAMActionLogs: []domain.SAMActionLog{samLog(5991, leadA, fixtureNow), {ID: "nope", EntityID: leadA}}}, nil,
				`samActionLogs[1].id: not a uuid: "nope"`},
			{&dataset.Dataset{Principals: []domain.Principal{{ID: id(499), LeadID: leadA, FirstName: "A", LastName: "B", SSN: ptr("1")}}}, nil,
				"principals[0].ssn: importing an SSN needs the master key"},
			{&dataset.Dataset{PricingModels: []domain.PricingModel{{ID: id(559), MerchantID: merchantA, Active: true, Type: "standard"}}}, testdb.Ring(t),
				"pricingModels[0].active: merchant " + string(merchantA) + " already has an active pricing model"},
			{&dataset.Dataset{CardPlans: []domain.CardPlan{{ID: planVisa, Code: "visa2", DisplayName: "Visa"}}}, nil,
				"cardPlans[0].id: duplicate id " + string(planVisa) + ": already in the database"},
		}
		for _, c := range cases {
			_, err := dataset.Import(ctx, st, c.ds, c.ring)
			if err == nil || datasetError(t, err).Error() != c.want {
				t.Errorf("error = %v, want %s", err, c.want)
			}
		}
	})
}
