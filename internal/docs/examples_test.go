package docs

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"backoffice/internal/dataset"
	"backoffice/internal/deviceparams"
	"backoffice/internal/domain"
)

// TestDatasetExample reads the example of docs/dataset.md with the rules of import: a user who
// copies it must get a file that imports.
func TestDatasetExample(t *testing.T) {
	ds := datasetExample(t)
	for key, n := range map[string]int{"partners": len(ds.Partners), "users": len(ds.Users), "apiKeys": len(ds.APIKeys),
		"sessions": len(ds.Sessions), "cardPlans": len(ds.CardPlans), "leads": len(ds.Leads), "principals": len(ds.Principals),
		"merchants": len(ds.Merchants), "merchantDocuments": len(ds.MerchantDocuments), "pricingModels": len(ds.PricingModels),
		"deploymentModels": len(ds.DeploymentModels), "deploymentOrders": len(ds.DeploymentOrders),
		"inventoryUnits": len(ds.InventoryUnits), "equipment": len(ds.Equipment), "varsheets": len(ds.Varsheets),
		"lineItems": len(ds.LineItems), "shipments": len(ds.Shipments), "fileBuilds": len(ds.FileBuilds),
		"samActionLogs": len(ds.SAMActionLogs), "merchantNotes": len(ds.MerchantNotes), "auditEvents": len(ds.AuditEvents)} {
		if n == 0 {
			t.Errorf("the example has no %s; it is meant to show every key", key)
		}
	}
	// Enough for the audit list: its credentials act as a staff user who may read the trail.
	users := map[domain.ID]domain.User{}
	for _, u := range ds.Users {
		users[u.ID] = u
	}
	for _, k := range ds.APIKeys {
		u := users[k.UserID]
		if u.PartnerID != nil || !(domain.Actor{Permissions: u.Permissions}).Can(domain.PermReadAuditEvents) {
			t.Errorf("the example's API key %s acts as %s, who may not read the audit list (staff only, with %s)", k.ID, u.Email, domain.PermReadAuditEvents)
		}
	}
}

// TestDatasetPermissions: the users table of docs/dataset.md names every permission a user may hold.
func TestDatasetPermissions(t *testing.T) {
	doc := string(openRepo(t).read("docs/dataset.md"))
	_, users, _ := strings.Cut(doc, "\n### `users`\n")
	users, _, _ = strings.Cut(users, "\n### ")
	for _, p := range domain.KnownPermissions() {
		if !strings.Contains(users, "`"+string(p)+"`") {
			t.Errorf("docs/dataset.md's users table does not name the permission %s", p)
		}
	}
}

// TestDeviceParametersExample derives the payload of the dataset example's line item and
// compares it, field order included, with the example of docs/device-parameters.md.
func TestDeviceParametersExample(t *testing.T) {
	ds := datasetExample(t)
	got, err := json.Marshal(deviceparams.Derive(pushInput(t, ds, ds.LineItems[0])))
	if err != nil {
		t.Fatal(err)
	}
	want := fencedBlock(t, "docs/device-parameters.md", "### Example")
	var compact bytes.Buffer
	if err := json.Compact(&compact, want); err != nil {
		t.Fatalf("the example of docs/device-parameters.md is not JSON: %v", err)
	}
	if compact.String() != string(got) {
		t.Errorf("docs/device-parameters.md shows a payload the code does not derive:\n doc: %s\ncode: %s", compact.String(), got)
	}
}

func datasetExample(t *testing.T) *dataset.Dataset {
	t.Helper()
	ds, err := dataset.Read(bytes.NewReader(fencedBlock(t, "docs/dataset.md", "## A small complete example")))
	if err != nil {
		t.Fatalf("the example of docs/dataset.md does not read: %v", err)
	}
	return ds
}

// pushInput gathers what a push of item reads, as the push does, from the records of ds.
func pushInput(t *testing.T, ds *dataset.Dataset, item domain.LineItem) deviceparams.Input {
	t.Helper()
	var in deviceparams.Input
	for _, e := range ds.Equipment {
		if item.EquipmentID != nil && e.ID == *item.EquipmentID && e.VendorTerminalID != nil {
			in.TerminalID = *e.VendorTerminalID
		}
	}
	for _, u := range ds.InventoryUnits {
		if item.InventoryUnitID != nil && u.ID == *item.InventoryUnitID {
			in.SerialNumber = &u.SerialNumber
		}
	}
	for _, v := range ds.Varsheets {
		if item.VarsheetID != nil && v.ID == *item.VarsheetID {
			in.Varsheet = deviceparams.Varsheet{MerchantNumber: v.MerchantNumber, TerminalIDNumber: v.TerminalIDNumber,
				VNumber: v.VNumber, Chain: v.Chain, Agent: v.Agent, StoreNumber: v.StoreNumber,
				MerchantLocationNumber: v.MerchantLocationNumber, CurrencyCode: v.CurrencyCode, TimeZoneCode: v.TimeZoneCode,
				PinDebit: v.PinDebit, EBTFoodStamps: v.EBTFoodStamps, EBTCash: v.EBTCash}
		}
	}
	for _, f := range ds.FileBuilds {
		if f.LineItemID == item.ID {
			s, err := deviceparams.ParseSettings(f.Settings)
			if err != nil {
				t.Fatal(err)
			}
			in.Settings = s
		}
	}
	var merchant domain.ID
	for _, o := range ds.DeploymentOrders {
		if o.ID == item.OrderID {
			merchant = o.MerchantID
		}
	}
	for _, p := range ds.PricingModels {
		if p.MerchantID == merchant && p.Active {
			in.Pricing = deviceparams.PricingModel{Type: p.Type, AdjustmentPercent: p.AdjustmentPercent}
		}
	}
	if in.TerminalID == "" || in.Pricing.Type == "" || in.Settings.Receipt.CustomerCopy == "" {
		t.Fatalf("the example's line item %s lacks what a push needs: %+v", item.ID, in)
	}
	return in
}

// fencedBlock returns the first fenced code block after the line heading of a file.
func fencedBlock(t *testing.T, name, heading string) []byte {
	t.Helper()
	repo := openRepo(t)
	lines := strings.Split(string(repo.read(name)), "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == heading {
			start = i
			break
		}
	}
	if start < 0 {
		t.Fatalf("%s has no heading %q", name, heading)
	}
	var block []string
	in := false
	for _, l := range lines[start+1:] {
		switch {
		case !in && strings.HasPrefix(l, "```"):
			in = true
		case in && strings.HasPrefix(l, "```"):
			return []byte(strings.Join(block, "\n"))
		case in:
			block = append(block, l)
		}
	}
	t.Fatalf("%s has no code block after %q", name, heading)
	return nil
}

// TestDatasetTablesNameEveryField: each key's section of docs/dataset.md names every field its
// records have in a file (the fields of objects within a record included), so that what export
// writes and import reads is documented.
func TestDatasetTablesNameEveryField(t *testing.T) {
	doc := string(openRepo(t).read("docs/dataset.md"))
	section := func(key string) string {
		_, s, found := strings.Cut(doc, "\n### `"+key+"`")
		if !found {
			t.Errorf("docs/dataset.md has no section for the key %s", key)
		}
		s, _, _ = strings.Cut(s, "\n#")
		return s
	}
	// The four stamp fields are named once, where the first key that has them begins.
	stamps := jsonFields(reflect.TypeFor[domain.Stamps]())
	keys := reflect.TypeFor[dataset.Dataset]()
	for i := range keys.NumField() {
		key, _, _ := strings.Cut(keys.Field(i).Tag.Get("json"), ",")
		if key == "deletes" {
			continue // ids, not records: its own section
		}
		text := section(key)
		for _, name := range jsonFields(keys.Field(i).Type.Elem()) {
			where := text
			if slices.Contains(stamps, name) {
				where = section("inventoryUnits")
			}
			if !strings.Contains(where, "`"+name+"`") {
				t.Errorf("docs/dataset.md's %s section does not name the field %s", key, name)
			}
		}
	}
}

// jsonFields are the JSON names of a record type's fields, and of the fields of the service's own
// structs within it.
func jsonFields(typ reflect.Type) []string {
	var out []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		inner := f.Type
		for inner.Kind() == reflect.Pointer || inner.Kind() == reflect.Slice {
			inner = inner.Elem()
		}
		own := inner.Kind() == reflect.Struct && strings.HasPrefix(inner.PkgPath(), "backoffice/")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			out = append(out, jsonFields(f.Type)...)
		case own:
			out = append(out, name)
			out = append(out, jsonFields(inner)...)
		default:
			out = append(out, name)
		}
	}
	return out
}
