package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"backoffice/internal/app"
	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/gateway"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

func pushPath(order, item domain.ID) string {
	return "/v1/crm/deployment-orders/" + order.String() + "/line-items/" + item.String() + "/device-parameters"
}

func (h *harness) push(order, item domain.ID, key string) response {
	return h.do(http.MethodPost, pushPath(order, item), "Api-Key "+key)
}

func (h *harness) export(t *testing.T) *dataset.Dataset {
	t.Helper()
	ds, err := dataset.Export(context.Background(), h.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestPushPreconditionsInOrder(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		cases := []struct {
			order, item domain.ID
			code        string
		}{
			{orderA, itemCanceled, "line_item_inactive"}, // fails every later check too
			{orderA, itemReturned, "line_item_inactive"},
			{orderA, itemTerminal, "not_gateway_workflow"},
			{orderA, itemNoEquipment, "missing_equipment"},
			{orderA, itemNoVendorID, "missing_vendor_terminal_id"},
			{orderA, itemNoVarsheet, "missing_varsheet"},
			{orderA, itemNoFileBuild, "missing_file_build"},
			{orderNoPricing, itemNoPricing, "no_active_pricing_model"},
		}
		for _, c := range cases {
			wantError(t, h.push(c.order, c.item, partnerAKey), http.StatusConflict, c.code)
		}
		if n := len(h.export(t).MerchantNotes); n != 0 {
			t.Fatalf("refused pushes wrote %d notes", n)
		}
		for _, tid := range []string{"TID-R", "TID-T", "TID-V", "TID-F", "TID-P"} {
			if _, sent := h.sim.Last(tid); sent {
				t.Errorf("a refused push reached the gateway for terminal %s", tid)
			}
		}
	})
}

func TestPushNotFound(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		wantError(t, h.push(id(9999), itemOK, staffKey), http.StatusNotFound, "not_found")        // unknown order
		wantError(t, h.push(orderA, id(9999), staffKey), http.StatusNotFound, "not_found")        // unknown item
		wantError(t, h.push(orderA, itemB, staffKey), http.StatusNotFound, "not_found")           // item of another order
		wantError(t, h.push(orderB, itemB, partnerAKey), http.StatusNotFound, "not_found")        // another partner's
		wantError(t, h.push(orderA, itemOK, noPermKey), http.StatusForbidden, "forbidden")        // no permission
		wantError(t, h.push(orderA, itemCanceled, partnerBKey), http.StatusNotFound, "not_found") // 404 before 409
	})
}

type lineItemView struct {
	domain.LineItem
	InventoryUnit *domain.InventoryUnit `json:"inventoryUnit"`
	Equipment     *struct {
		domain.Equipment
		ModelName     *string `json:"modelName"`
		EquipmentType *string `json:"equipmentType"`
		SerialNumber  *string `json:"serialNumber"`
	} `json:"equipment"`
	Varsheet *domain.Varsheet `json:"varsheet"`
	Shipment *domain.Shipment `json:"shipment"`
}

// A line item with no inventory unit and no shipment answers both as null, and the answer is
// what the document declares (validate reads it with kin-openapi, a JSON Schema validator, and
// ajv after the tests).
func TestPushAnswersAbsentObjectsAsNull(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		r := h.push(orderA, itemBare, partnerAKey)
		if r.Status != http.StatusOK {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		var v lineItemView
		r.decode(t, &v)
		if v.InventoryUnit != nil || v.Shipment != nil || v.Equipment == nil || v.Varsheet == nil {
			t.Fatalf("embedded objects: %s", r.Body)
		}
		if v.Equipment.SerialNumber != nil {
			t.Errorf("serialNumber of equipment without an inventory unit: %q", *v.Equipment.SerialNumber)
		}
		var raw map[string]json.RawMessage
		r.decode(t, &raw)
		for _, k := range []string{"inventoryUnit", "shipment", "inventoryUnitId"} {
			if string(raw[k]) != "null" {
				t.Errorf("%s = %s, want null", k, raw[k])
			}
		}
	})
}

// statuses lists every status a push must leave alone.
func statuses(ds *dataset.Dataset) []string {
	var out []string
	for _, li := range ds.LineItems {
		out = append(out, "line item "+string(li.ID)+" "+li.Status)
	}
	for _, e := range ds.Equipment {
		out = append(out, "equipment "+string(e.ID)+" "+e.Status)
	}
	for _, u := range ds.InventoryUnits {
		out = append(out, "unit "+string(u.ID)+" "+u.Status)
	}
	for _, s := range ds.Shipments {
		out = append(out, "shipment "+string(s.ID)+" "+s.Status)
	}
	return out
}

func TestPushSendsParametersAndWritesANote(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		before := statuses(h.export(t))
		r := h.push(orderA, itemOK, partnerAKey)
		if r.Status != http.StatusOK {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		var v lineItemView
		r.decode(t, &v)
		if v.ID != itemOK || v.InventoryUnit == nil || v.Equipment == nil || v.Varsheet == nil || v.Shipment == nil {
			t.Fatalf("embedded objects missing: %s", r.Body)
		}
		if *v.Equipment.ModelName != "Gateway Terminal" || *v.Equipment.EquipmentType != "terminal" || v.Equipment.SerialNumber != nil {
			t.Fatalf("derived equipment fields: %s", r.Body)
		}
		sent, ok := h.sim.Last("TID/1 ?#%")
		if !ok {
			t.Fatal("the gateway received nothing for the terminal")
		}
		var payload struct {
			TerminalID   string   `json:"terminalId"`
			SerialNumber *string  `json:"serialNumber"`
			Menu         []string `json:"menu"`
			HomeScreen   struct {
				PricingMode       string  `json:"pricingMode"`
				AdjustmentPercent *string `json:"adjustmentPercent"`
			} `json:"homeScreen"`
		}
		if err := json.Unmarshal(sent, &payload); err != nil {
			t.Fatal(err)
		}
		if payload.TerminalID != "TID/1 ?#%" || payload.SerialNumber == nil || *payload.SerialNumber != "SN-1" ||
			payload.HomeScreen.PricingMode != "surcharge" || *payload.HomeScreen.AdjustmentPercent != "3.000" {
			t.Fatalf("payload %s", sent)
		}
		if diff := cmp.Diff([]string{"credit_sale", "debit_sale", "refund", "void", "tip_adjust", "batch_close"}, payload.Menu); diff != "" {
			t.Fatalf("menu (-want +got):\n%s", diff)
		}
		after := h.export(t)
		if diff := cmp.Diff(before, statuses(after)); diff != "" {
			t.Fatalf("a push changed statuses (-before +after):\n%s", diff)
		}
		if len(after.MerchantNotes) != 1 {
			t.Fatalf("%d notes, want 1", len(after.MerchantNotes))
		}
		n := after.MerchantNotes[0]
		if n.MerchantID != merchantA || n.CreatedBy != userA || !strings.Contains(n.Body, "succeeded") ||
			!strings.Contains(n.Body, itemOK.String()) || !strings.Contains(n.Body, "TID/1 ?#%") {
			t.Fatalf("note %+v", n)
		}
	})
}

func TestPushWithoutGatewayIs502AndNoted(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		wantError(t, h.push(orderA, itemOK, staffKey), http.StatusBadGateway, "gateway_unavailable")
		notes := h.export(t).MerchantNotes
		if len(notes) != 1 || !strings.Contains(notes[0].Body, "no gateway is configured") {
			t.Fatalf("notes %+v", notes)
		}
	}, withoutGateway)
}

func TestPushRejectedByGateway(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		h.useGateway(t, gateway.NewSimulator(gateway.SimOptions{Token: "gw-token"}), "wrong-token", time.Second)
		r := h.push(orderA, itemOK, staffKey)
		wantError(t, r, http.StatusBadGateway, "gateway_rejected")
		if e := r.err(t); !strings.Contains(e.Detail, "rejected") {
			t.Fatalf("detail %q", e.Detail)
		}
		if notes := h.export(t).MerchantNotes; len(notes) != 1 || !strings.Contains(notes[0].Body, "failed") {
			t.Fatalf("notes %+v", notes)
		}
	})
}

func TestPushToAnUnavailableGateway(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		h.useGateway(t, gateway.NewSimulator(gateway.SimOptions{FailureRate: 1}), "", 500*time.Millisecond)
		r := h.push(orderA, itemOK, staffKey)
		wantError(t, r, http.StatusBadGateway, "gateway_unavailable")
		notes := h.export(t).MerchantNotes
		if len(notes) != 1 || !strings.Contains(notes[0].Body, "failed: gateway unavailable") {
			t.Fatalf("notes %+v", notes)
		}
	})
}

func TestPushLease(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		// Another process holds a live lease: refused at once, no note.
		if ok, err := h.st.AcquirePushLease(ctx, itemOK, "other-process", fixtureNow, time.Hour); !ok || err != nil {
			t.Fatalf("acquire: %v %v", ok, err)
		}
		r := h.push(orderA, itemOK, staffKey)
		wantError(t, r, http.StatusConflict, "push_in_progress")
		// When to come back: when the running push's gateway budget ends, 30 s before its lease
		// does, in whole seconds rounded up.
		if got := r.Header.Get("Retry-After"); got != "3570" {
			t.Errorf("Retry-After %q, want 3570", got)
		}
		if n := len(h.export(t).MerchantNotes); n != 0 {
			t.Fatalf("%d notes after a refused push", n)
		}
		// Its lease expires (it crashed): the next push takes over.
		if err := h.st.ReleasePushLease(ctx, itemOK, "other-process"); err != nil {
			t.Fatal(err)
		}
		if ok, err := h.st.AcquirePushLease(ctx, itemOK, "crashed-process", fixtureNow, -time.Second); !ok || err != nil {
			t.Fatalf("acquire: %v %v", ok, err)
		}
		if r := h.push(orderA, itemOK, staffKey); r.Status != http.StatusOK {
			t.Fatalf("after expiry: %d %s", r.Status, r.Body)
		}
		// And releases it when done.
		if r := h.push(orderA, itemOK, staffKey); r.Status != http.StatusOK {
			t.Fatalf("second push: %d %s", r.Status, r.Body)
		}
	})
}

func TestConcurrentPushesOfOneLineItem(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		// The gateway holds the first push's request until the second push has been answered, so
		// the second arrives while the first runs however the machine schedules them.
		sim := gateway.NewSimulator(gateway.SimOptions{})
		reached, release := make(chan struct{}, 1), make(chan struct{})
		held := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case reached <- struct{}{}:
			default:
			}
			<-release
			sim.ServeHTTP(w, r)
		})
		h.useGatewayServedBy(t, held, sim, "", 10*time.Second)
		answers := make(chan response, 2)
		go func() { answers <- h.push(orderA, itemOK, staffKey) }()
		select {
		case <-reached:
		case r := <-answers:
			t.Fatalf("the first push answered %d without calling the gateway", r.Status)
		}
		go func() { answers <- h.push(orderA, itemOK, staffKey) }()
		second := <-answers
		close(release)
		first := <-answers
		if first.Status != http.StatusOK || second.Status != http.StatusConflict {
			t.Fatalf("statuses: first push %d, second %d while the first ran; want 200 and 409", first.Status, second.Status)
		}
		for _, r := range []response{first, second} {
			if r.Status == http.StatusConflict {
				wantError(t, r, http.StatusConflict, "push_in_progress")
				// What the running push's budget (10 s) has left, not its lease (40 s).
				if n, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || n < 1 || n > 10 {
					t.Errorf("Retry-After %q, want 1 to 10 seconds", r.Header.Get("Retry-After"))
				}
			}
		}
		if n := len(h.export(t).MerchantNotes); n != 1 {
			t.Fatalf("%d notes, want 1", n)
		}
	})
}

// The demo's answers are what the document declares too, the push of its line item without
// inventory unit or shipment included (both null).
func TestDemoAnswersMatchTheDocument(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ds := app.DemoDataset(fixtureNow)
		h := newHarnessOf(t, st, ds)
		var bare domain.LineItem
		for _, li := range ds.LineItems {
			if li.InventoryUnitID == nil {
				bare = li
			}
		}
		if bare.ID == "" {
			t.Fatal("the demo dataset has no line item without an inventory unit")
		}
		for _, li := range ds.LineItems {
			r := h.push(li.OrderID, li.ID, app.DemoAPIKey)
			if r.Status != http.StatusOK {
				t.Fatalf("push of %s: %d %s", li.ID, r.Status, r.Body)
			}
			if li.ID == bare.ID && (!strings.Contains(string(r.Body), `"inventoryUnit":null`) || !strings.Contains(string(r.Body), `"shipment":null`)) {
				t.Errorf("push of %s: %s, want inventoryUnit and shipment null", li.ID, r.Body)
			}
		}
		lead := ds.Leads[0].ID
		for _, path := range []string{samPath(lead.String()) + "?size=5", "/v1/crm/leads/" + lead.String() + "/service-acceptance",
			decryptPath(lead, ds.Principals[0].ID, "ssn"), auditEventsPath} {
			if r := h.get(path, app.DemoAPIKey); r.Status != http.StatusOK {
				t.Errorf("%s: %d %s", path, r.Status, r.Body)
			}
		}
	})
}
