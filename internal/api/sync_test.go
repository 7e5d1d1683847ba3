package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/testdb"
)

// syncedPayload is what the push sends that an upstream sync changes.
type syncedPayload struct {
	Merchant struct {
		MerchantNumber *string `json:"merchantNumber"`
		VNumber        string  `json:"vNumber"`
	} `json:"merchant"`
	HomeScreen struct {
		PricingMode       string  `json:"pricingMode"`
		AdjustmentPercent *string `json:"adjustmentPercent"`
	} `json:"homeScreen"`
}

// upsert imports ds with --upsert, through a file as the command does.
func (h *harness) upsert(ds *dataset.Dataset) {
	h.t.Helper()
	var b bytes.Buffer
	if err := dataset.Write(&b, ds); err != nil {
		h.t.Fatal(err)
	}
	read, err := dataset.Read(&b)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := dataset.ImportWith(context.Background(), h.st, read, testdb.Ring(h.t), dataset.Options{Upsert: true}); err != nil {
		h.t.Fatalf("upsert: %v", err)
	}
}

// pushed pushes the line item that passes every check and reads what the gateway received.
func (h *harness) pushed() syncedPayload {
	h.t.Helper()
	if r := h.push(orderA, itemOK, partnerAKey); r.Status != http.StatusOK {
		h.t.Fatalf("push: %d %s", r.Status, r.Body)
	}
	sent, ok := h.sim.Last("TID/1 ?#%")
	if !ok {
		h.t.Fatal("the gateway received nothing")
	}
	var p syncedPayload
	if err := json.Unmarshal(sent, &p); err != nil {
		h.t.Fatal(err)
	}
	return p
}

// After an upsert corrects the VAR sheet, the next push sends the corrected values.
func TestPushSendsAnUpsertedVarsheet(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		if p := h.pushed(); p.Merchant.VNumber != "V1" || *p.Merchant.MerchantNumber != "M1" {
			t.Fatalf("before: %+v", p.Merchant)
		}
		v := fixture().Varsheets[0]
		v.VNumber, v.MerchantNumber = "V1-corrected", ptr("M1-corrected")
		h.upsert(&dataset.Dataset{Varsheets: []domain.Varsheet{v}})
		if p := h.pushed(); p.Merchant.VNumber != "V1-corrected" || p.Merchant.MerchantNumber == nil || *p.Merchant.MerchantNumber != "M1-corrected" {
			t.Errorf("after the upsert the push sent %+v, want the corrected VAR sheet", p.Merchant)
		}
	})
}

// After an upsert switches the merchant's active pricing model (the new one active, the old one
// inactive, in one file), the next push sends the new pricing.
func TestPushSendsASwitchedPricingModel(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		if p := h.pushed(); p.HomeScreen.PricingMode != "surcharge" {
			t.Fatalf("before: %+v", p.HomeScreen)
		}
		old := fixture().PricingModels[0]
		old.Active = false
		dual := domain.PricingModel{ID: id(559), MerchantID: merchantA, Active: true, Type: "dual_pricing", AdjustmentPercent: ptr("4.000")}
		h.upsert(&dataset.Dataset{PricingModels: []domain.PricingModel{dual, old}})
		p := h.pushed()
		if p.HomeScreen.PricingMode != "dual_pricing" || p.HomeScreen.AdjustmentPercent == nil || *p.HomeScreen.AdjustmentPercent != "4.000" {
			t.Errorf("after the switch the push sent %+v, want dual pricing at 4.000", p.HomeScreen)
		}
	})
}
