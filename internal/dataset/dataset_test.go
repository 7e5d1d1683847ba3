package dataset

import (
	"bytes"
	"strings"
	"testing"
)

const (
	p1 = "00000000-0000-4000-8000-000000000001"
	l1 = "00000000-0000-4000-8000-000000000301"
)

func TestReadNamesTheProblem(t *testing.T) {
	tests := []struct {
		name, file, want string
	}{
		{"not an object", `[1]`, "not a JSON object"},
		{"trailing data", `{} {}`, "unexpected data after the JSON object"},
		{"unknown key", `{"partnerz": []}`, "partnerz: unknown key"},
		{"not an array", `{"partners": {}}`, "partners: expected an array of objects"},
		{"null record", `{"partners": [null]}`, "partners[0]: expected an object, got null"},
		{"unknown field", `{"partners": [{"id": "` + p1 + `", "name": "P", "nmae": "x"}]}`, `partners[0]: unknown field "nmae"`},
		{"wrong type", `{"partners": [{"id": "` + p1 + `", "name": 5}]}`, "partners[0].name: expected a string, got number"},
		{"nested wrong type", `{"leads": [{"id": "` + l1 + `", "partnerId": "` + p1 + `", "businessName": "B", "serviceAcceptance": {"configured": "yes"}}]}`,
			"leads[0].serviceAcceptance.configured: expected a boolean, got string"},
		{"bad uuid", `{"partners": [{"id": "` + p1 + `", "name": "P"}, {"id": "00000000-0000-9000-8000-000000000001", "name": "Q"}]}`,
			`partners[1].id: not a uuid: "00000000-0000-9000-8000-000000000001"`},
		{"missing", `{"partners": [{"id": "` + p1 + `"}]}`, "partners[0].name: required, must not be empty"},
		{"duplicate", `{"partners": [{"id": "` + p1 + `", "name": "P"}, {"id": "` + strings.ToUpper(p1) + `", "name": "Q"}]}`,
			"partners[1].id: duplicate id " + p1},
		{"bad enum", `{"deploymentModels": [{"id": "` + p1 + `", "name": "M", "equipmentType": "toaster", "workflow": "gateway"}]}`,
			`deploymentModels[0].equipmentType: must be one of terminal, pin_pad, lite_pos, mobile_app, var_sheet, gateway, got "toaster"`},
		{"bad permission", `{"users": [{"id": "` + p1 + `", "email": "a@b.c", "permissions": ["root"]}]}`, `users[0].permissions[0]: unknown permission "root"`},
		{"short key", `{"apiKeys": [{"id": "` + p1 + `", "userId": "` + p1 + `", "key": "short"}]}`, "apiKeys[0].key: must be at least 16 characters"},
		{"bad settings", `{"fileBuilds": [{"id": "` + p1 + `", "lineItemId": "` + p1 + `", "settings": {}}]}`, "fileBuilds[0].settings: "},
		{"pricing", `{"pricingModels": [{"id": "` + p1 + `", "merchantId": "` + p1 + `", "active": true, "type": "surcharge"}]}`, "pricingModels[0]"},
		{"two active", `{"pricingModels": [{"id": "` + p1 + `", "merchantId": "` + l1 + `", "active": true, "type": "standard"},
			{"id": "` + l1 + `", "merchantId": "` + l1 + `", "active": true, "type": "standard"}]}`, "pricingModels[1].active: merchant"},
		{"bad time", `{"samActionLogs": [{"id": "` + p1 + `", "entityId": "` + l1 + `", "action": "a", "actionDate": "yesterday", "samId": 1}]}`, "samActionLogs[0]"},
		{"fractional samId", `{"samActionLogs": [{"id": "` + p1 + `", "entityId": "` + l1 + `", "action": "a", "actionDate": "2026-01-01T00:00:00Z", "samId": 1.5}]}`,
			"samActionLogs[0].samId: expected a number"},
	}
	for _, tt := range tests {
		_, err := Read(strings.NewReader(tt.file))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want prefix %q", tt.name, err, tt.want)
		}
	}
}

func TestReadCanonicalisesIDs(t *testing.T) {
	ds, err := Read(strings.NewReader(`{"partners": [{"id": "` + strings.ToUpper(p1) + `", "name": "P"}],
		"samActionLogs": [{"id": "` + l1 + `", "entityId": "` + strings.ToUpper(l1) + `", "action": "a", "actionDate": "2026-01-01T01:00:00+01:00", "samId": 1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if ds.Partners[0].ID != p1 || ds.SAMActionLogs[0].EntityID != l1 {
		t.Fatalf("ids not canonical: %+v %+v", ds.Partners[0], ds.SAMActionLogs[0])
	}
	var out bytes.Buffer
	if err := Write(&out, ds); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"actionDate": "2026-01-01T00:00:00Z"`) && !strings.Contains(out.String(), `"actionDate": "2026-01-01T01:00:00+01:00"`) {
		t.Fatalf("export: %s", out.String())
	}
}

func TestEmptyObjectIsAnEmptyDataset(t *testing.T) {
	ds, err := Read(strings.NewReader(`{}`))
	if err != nil || ds == nil {
		t.Fatalf("Read({}) = %v, %v", ds, err)
	}
}

func FuzzRead(f *testing.F) {
	for _, s := range []string{`{}`, `{"partners": [{"id": "` + p1 + `", "name": "P"}]}`, `[`, `{"leads": [{}]}`, `null`, `{"fileBuilds": [{"settings": 1}]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ds, err := Read(strings.NewReader(s))
		if err == nil && ds == nil {
			t.Fatal("no dataset and no error")
		}
	})
}
