package dataset

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"

	"backoffice/internal/domain"
)

const (
	p1 = "00000000-0000-4000-8000-000000000001"
	l1 = "00000000-0000-4000-8000-000000000301"
)

// apiKeyFile and sessionFile are files of one credential with this secret and expiry (JSON).
func apiKeyFile(key, expires string) string {
	return `{"apiKeys": [{"id": "` + p1 + `", "userId": "` + p1 + `", "key": "` + key + `", "expiresAt": ` + expires + `}]}`
}

func sessionFile(token, expires string) string {
	return `{"sessions": [{"id": "` + p1 + `", "userId": "` + p1 + `", "token": "` + token + `", "expiresAt": ` + expires + `}]}`
}

// readProblems are files Read refuses, and the start of the error it gives each.
var readProblems = []struct {
	name, file, want string
}{
	{"not an object", `[1]`, "not a JSON object"},
	{"trailing data", `{} {}`, "unexpected data after the JSON object"},
	{"trailing bracket", `{} }`, "unexpected data after the JSON object"},
	{"unknown key", `{"partnerz": []}`, "partnerz: unknown key"},
	{"not an array", `{"partners": {}}`, "partners: expected an array of objects"},
	{"null record", `{"partners": [null]}`, "partners[0]: expected an object, got null"},
	{"unknown field", `{"partners": [{"id": "` + p1 + `", "name": "P", "nmae": "x"}]}`, `partners[0].nmae: unknown field`},
	{"wrong type", `{"partners": [{"id": "` + p1 + `", "name": 5}]}`, "partners[0].name: expected a string, got number"},
	{"nested unknown field", `{"leads": [{"id": "` + l1 + `", "partnerId": "` + p1 + `", "businessName": "B", "serviceAcceptance": {"configured": true, "amex": "x"}}]}`,
		"leads[0].serviceAcceptance.amex: unknown field"},
	{"nested unknown field of a known name", `{"leads": [{"id": "` + l1 + `", "partnerId": "` + p1 + `", "businessName": "B", "serviceAcceptance": {"id": "x"}}]}`,
		`leads[0].serviceAcceptance.id: unknown field (line 1, column 161)`},
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
	// An SSN is on file or not (null): an empty one would decrypt to "" as if it were one.
	{"empty SSN", `{"principals": [{"id": "` + p1 + `", "leadId": "` + l1 + `", "firstName": "A", "lastName": "B", "ssn": ""}]}`,
		"principals[0].ssn: empty: leave ssn out, or null, for a principal with no SSN on file"},
	{"blank SSN", `{"principals": [{"id": "` + p1 + `", "leadId": "` + l1 + `", "firstName": "A", "lastName": "B", "ssn": " \t"}]}`,
		"principals[0].ssn: empty: leave ssn out, or null, for a principal with no SSN on file"},
	{"control character in an email", `{"users": [{"id": "` + p1 + `", "email": "a\u0007@b.c"}]}`, `users[0].email: holds a control character (U+0007)`},
	{"short key", `{"apiKeys": [{"id": "` + p1 + `", "userId": "` + p1 + `", "key": "short"}]}`, "apiKeys[0].key: too weak to be a credential"},
	// Guessable secrets are refused, naming the record (the strength rule itself:
	// secrets.CheckCredential).
	{"a repeated key", apiKeyFile("aaaaaaaaaaaaaaaa", "null"), "apiKeys[0].key: too weak to be a credential"},
	{"a PIN-like key", apiKeyFile("0000000000001234", "null"), "apiKeys[0].key: too weak to be a credential"},
	{"a word key", apiKeyFile("passwordpassword", "null"), "apiKeys[0].key: too weak to be a credential"},
	{"a blank key", apiKeyFile("                ", "null"), "apiKeys[0].key: holds white space"},
	{"a weak session token", sessionFile("passwordpassword", `"2999-01-01T00:00:00Z"`), "sessions[0].token: too weak to be a credential"},
	{"bad settings", `{"fileBuilds": [{"id": "` + p1 + `", "lineItemId": "` + p1 + `", "settings": {}}]}`, "fileBuilds[0].settings.tips: "},
	{"pricing percent", `{"pricingModels": [{"id": "` + p1 + `", "merchantId": "` + p1 + `", "type": "surcharge", "adjustmentPercent": "-1"}]}`,
		"pricingModels[0].adjustmentPercent: "},
	{"pricing", `{"pricingModels": [{"id": "` + p1 + `", "merchantId": "` + p1 + `", "active": true, "type": "surcharge"}]}`, "pricingModels[0]"},
	{"two active", `{"pricingModels": [{"id": "` + p1 + `", "merchantId": "` + l1 + `", "active": true, "type": "standard"},
		{"id": "` + l1 + `", "merchantId": "` + l1 + `", "active": true, "type": "standard"}]}`, "pricingModels[1].active: merchant"},
	{"bad time", `{"samActionLogs": [{"id": "` + p1 + `", "entityId": "` + l1 + `", "action": "a", "actionDate": "yesterday", "samId": 1}]}`, "samActionLogs[0]"},
	{"deletes not an object", `{"deletes": ["` + p1 + `"]}`, "deletes: expected an object whose keys name kinds of records, each an array of ids"},
	{"deletes not ids", `{"deletes": {"varsheets": [1]}}`, "deletes.varsheets: expected an array of ids"},
	{"deletes unknown key", `{"deletes": {"varsheet": ["` + p1 + `"]}}`, "deletes.varsheet: unknown key"},
	{"deletes bad uuid", `{"deletes": {"varsheets": ["x"]}}`, `deletes.varsheets[0]: not a uuid: "x"`},
	{"deletes a note", `{"deletes": {"merchantNotes": ["` + p1 + `"]}}`, "deletes.merchantNotes: merchant notes are written by the service and cannot be deleted"},
	{"fractional samId", `{"samActionLogs": [{"id": "` + p1 + `", "entityId": "` + l1 + `", "action": "a", "actionDate": "2026-01-01T00:00:00Z", "samId": 1.5}]}`,
		"samActionLogs[0].samId: expected a whole number from -9223372036854775808 to 9223372036854775807, got 1.5 (line 1, column 181)"},
}

func TestReadNamesTheProblem(t *testing.T) {
	tests := readProblems
	for _, tt := range tests {
		_, err := Read(strings.NewReader(tt.file))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want prefix %q", tt.name, err, tt.want)
		}
	}
}

// White space counts against the budget of the value after it, so that padding cannot make the
// reading hold more than a record's worth of the file; a run past it is refused as padding, at
// its start, not as a value too large. A shorter run is only white space.
func TestReadRefusesAPaddedFile(t *testing.T) {
	pad := strings.Repeat(" ", 50<<20)
	const want = "more than 1 MiB of white space in a row: remove the padding (at most 1 MiB of white space may come between two values)"
	for _, tt := range []struct{ name, file, want string }{
		{"before the object", pad + `{}`, want + " (line 1, column 1)"},
		{"between keys", `{"partners": [],` + pad + `"leads": []}`, want + " (line 1, column 17)"},
		{"between records", `{"partners": [{"id": "` + p1 + `", "name": "P"},` + strings.ReplaceAll(pad, " ", "\n") + `]}`,
			"partners[1]: " + want + " (line 1, column 75)"},
		{"between SAM logs", `{"samActionLogs": [` + pad + `]}`, "samActionLogs[0]: " + want + " (line 1, column 20)"},
		{"after the object", `{}` + pad, want + " (line 1, column 3)"},
	} {
		_, err := Read(strings.NewReader(tt.file))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.want)
		}
	}
	short := strings.Repeat("\n", 512<<10)
	if _, err := Read(strings.NewReader(short + `{"partners": [` + short + `]}` + short)); err != nil {
		t.Errorf("half a MiB of white space between values: %v", err)
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

const validFile = `{
 "partners": [{"id": "00000000-0000-4000-8000-000000000001", "name": "P"}],
 "users": [{"id": "00000000-0000-4000-8000-000000000002", "partnerId": null, "email": "a@b.c", "permissions": ["*"]}],
 "apiKeys": [{"id": "00000000-0000-4000-8000-000000000003", "userId": "00000000-0000-4000-8000-000000000002", "key": "-RvHfeKdNvKxngScXgYctEwNXpjUoHfs_apw1rq5tb4", "expiresAt": null}],
 "leads": [{"id": "00000000-0000-4000-8000-00000000000A", "partnerId": "00000000-0000-4000-8000-000000000001", "businessName": "L", "midId": null,
            "serviceAcceptance": {"configured": true, "selectedCardPlanIds": [], "ebtFcsNumber": null, "amexProgram": "esa", "amexEsaNumber": "1", "ebtBenefitMode": null}}],
 "principals": [{"id": "00000000-0000-4000-8000-000000000004", "leadId": "00000000-0000-4000-8000-00000000000a", "firstName": "F", "lastName": "L", "ssn": "123-45-6789"}],
 "samActionLogs": [
  {"id": "00000000-0000-4000-8000-000000000005", "entityId": "00000000-0000-4000-8000-00000000000a", "action": "update_mid", "actionDate": "2026-11-21T09:30:00Z", "samId": 1},
  {"id": "00000000-0000-4000-8000-000000000006", "entityId": "00000000-0000-4000-8000-00000000000A", "action": "board_merchant", "actionDate": "2026-11-21T09:31:00.5Z", "samId": 2}
 ],
 "shipments": null
}`

func TestReadValidFile(t *testing.T) {
	ds, err := Read(strings.NewReader(validFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.SAMActionLogs) != 2 || ds.SAMActionLogs[1].EntityID != "00000000-0000-4000-8000-00000000000a" || ds.Leads[0].ID != "00000000-0000-4000-8000-00000000000a" {
		t.Fatalf("ids not canonical: %+v", ds.SAMActionLogs)
	}
}

// fallbackProblems are files the fast path hands to the careful one, and what the error contains.
var fallbackProblems = []struct{ name, file, want string }{
	{"not an object", `[1]`, "not a JSON object"},
	{"trailing data", `{} {}`, "unexpected data after the JSON object"},
	{"unknown key", `{"nope": []}`, "nope: unknown key"},
	{"null record", `{"partners": [null]}`, "partners[0]: expected an object, got null"},
	{"unknown field", `{"partners": [{"id": "00000000-0000-4000-8000-000000000001", "name": "P", "x": 1}]}`, `partners[0].x: unknown field`},
	{"wrong type", `{"samActionLogs": [{"id": "00000000-0000-4000-8000-000000000005", "samId": "1"}]}`, "samActionLogs[0].samId: expected a number"},
	{"empty record", `{"partners": [{}]}`, "partners[0].id: required"},
	{"bad uuid", `{"samActionLogs": [{"id": "x", "entityId": "00000000-0000-4000-8000-000000000005", "action": "a", "actionDate": "2026-11-21T09:30:00Z", "samId": 1}]}`, `samActionLogs[0].id: not a uuid: "x"`},
	{"duplicate log", `{"samActionLogs": [
		{"id": "00000000-0000-4000-8000-000000000005", "entityId": "00000000-0000-4000-8000-000000000005", "action": "a", "actionDate": "2026-11-21T09:30:00Z", "samId": 1},
		{"id": "00000000-0000-4000-8000-000000000005", "entityId": "00000000-0000-4000-8000-000000000005", "action": "a", "actionDate": "2026-11-21T09:30:00Z", "samId": 1}]}`, "samActionLogs[1].id: duplicate id"},
	{"blank action", `{"samActionLogs": [{"id": "00000000-0000-4000-8000-000000000005", "entityId": "00000000-0000-4000-8000-000000000005", "action": " ", "actionDate": "2026-11-21T09:30:00Z", "samId": 1}]}`, "samActionLogs[0].action: required"},
	{"year past 9999 in UTC", `{"samActionLogs": [{"id": "00000000-0000-4000-8000-000000000005", "entityId": "00000000-0000-4000-8000-000000000005", "action": "a", "actionDate": "9999-12-31T23:59:59-05:00", "samId": 1}]}`,
		"samActionLogs[0].actionDate: a date-time whose year in UTC is outside 0000-9999"},
	{"year before 0000 in UTC", `{"samActionLogs": [{"id": "00000000-0000-4000-8000-000000000005", "entityId": "00000000-0000-4000-8000-000000000005", "action": "a", "actionDate": "0000-01-01T00:00:00+01:00", "samId": 1}]}`,
		"samActionLogs[0].actionDate: a date-time whose year in UTC is outside 0000-9999"},
	{"shipped past 9999 in UTC", `{"shipments": [{"id": "00000000-0000-4000-8000-000000000005", "lineItemId": "00000000-0000-4000-8000-000000000006", "status": "shipped", "shippedDate": "9999-12-31T23:59:59-05:00"}]}`,
		"shipments[0].shippedDate: a date-time whose year in UTC is outside 0000-9999"},
	{"repeated key", `{"partners": [], "partners": [null]}`, "partners: duplicate key: the file may hold each key once (line 1, column 18)"},
}

// The careful path names the record and field; the fast path must never hide that.
func TestReadFastPathFallsBack(t *testing.T) {
	for _, c := range fallbackProblems {
		_, err := Read(strings.NewReader(c.file))
		var de *Error
		if !errors.As(err, &de) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// FuzzRead: no input panics; Read and ReadFile take the same files and refuse the others with
// the same error (but for SAM logs that repeat an id, which only the import finds from a file),
// give the same records (ReadFile keeps the SAM logs in the file, and counts them), and name the
// line and column of every problem with a path.
func FuzzRead(f *testing.F) {
	for _, s := range []string{`{}`, `{"partners": [{"id": "` + p1 + `", "name": "P"}]}`, `[`, `{"leads": [{}]}`, `null`, `{"fileBuilds": [{"settings": 1}]}`} {
		f.Add([]byte(s))
	}
	f.Add([]byte(validFile))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"samActionLogs": [null]}`))
	f.Add([]byte(`{"deletes": {"varsheets": ["` + p1 + `"], "lineItems": []}}`))
	f.Add([]byte(`{"deletes": {"varsheets": null}, "deletes": {}}`))
	f.Add([]byte(`{"deletes": {"varsheets": [1]}}`))
	f.Add([]byte(`{"partners": [{"id": "00000000-0000-4000-8000-000000000001", "name": "P"}], "partners": []}`))
	f.Add([]byte(`{"fileBuilds": [{"id": "00000000-0000-4000-8000-000000000001", "lineItemId": "00000000-0000-4000-8000-000000000002", "settings": {"tips": 1}}]}`))
	f.Add([]byte(`{"pricingModels": [{"id": "00000000-0000-4000-8000-000000000001", "merchantId": "00000000-0000-4000-8000-000000000002", "active": true, "type": "surcharge", "adjustmentPercent": "3.5"}]}`))
	for _, logs := range samLogSeeds {
		f.Add([]byte(`{"samActionLogs": ` + logs + `}`))
	}
	for _, c := range readProblems {
		f.Add([]byte(c.file))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ds, err := Read(bytes.NewReader(b))
		file, ferr := ReadFile(bytes.NewReader(b), bytes.NewReader(b))
		if err != nil && strings.HasPrefix(err.Error(), "samActionLogs[") && strings.Contains(err.Error(), ".id: duplicate id") {
			return // a repeated log id: the import's to find
		}
		if fmt.Sprint(err) != fmt.Sprint(ferr) {
			t.Fatalf("Read: %v; ReadFile: %v", err, ferr)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("not an *Error: %v", err)
			}
			if e.Path != "" && e.Line == 0 {
				t.Fatalf("no line and column: %v", err)
			}
			return
		}
		logs := len(ds.SAMActionLogs)
		ds.SAMActionLogs = nil
		if diff := cmp.Diff(ds, file.ds); diff != "" || file.logs != logs {
			t.Fatalf("datasets differ (-Read +ReadFile), %d logs against %d:\n%s", file.logs, logs, diff)
		}
	})
}

// samLogSeeds are SAM log arrays at and around the edge of the plain shape the lean decoder reads.
var samLogSeeds = []string{
	`[]`,
	"[ \n\t] ",
	`[{"id": "00000000-0000-4000-8000-0000000000A1", "entityId": "` + l1 + `", "action": "create", "actionDate": "2024-01-02T03:04:05Z", "samId": 7}]`,
	`[{"id":"00000000-0000-4000-8000-0000000000a1","entityId":"` + l1 + `","action":"x","actionDate":"2024-01-02T03:04:05.123+02:00","samId":-0},{"samId":9223372036854775807,"action":"y","actionDate":"2024-01-02T03:04:05Z","entityId":"` + l1 + `","id":"00000000-0000-4000-8000-0000000000a2"}]`,
	`[{"id": "00000000-0000-4000-8000-0000000000a1", "ID": "00000000-0000-4000-8000-0000000000a2", "entityId": "` + l1 + `", "action": "a", "actionDate": "2024-01-02T03:04:05Z", "samId": 1}]`,
	`[{"id": "00000000-0000-4000-8000-0000000000a1", "id": "00000000-0000-4000-8000-0000000000a2", "entityId": "` + l1 + `", "action": "a", "actionDate": "2024-01-02T03:04:05Z", "samId": 1}]`,
	`[{"id": "00000000-0000-4000-8000-0000000000a1", "entityId": "` + l1 + `", "action": "a\u0041", "actionDate": "2024-01-02T03:04:05Z", "samId": 1}]`,
	`[{"id": "00000000-0000-4000-8000-0000000000a1", "entityId": "` + l1 + `", "action": "é", "actionDate": "2024-01-02T03:04:05Z", "samId": 1}]`,
	`[{"id": "00000000-0000-4000-8000-0000000000a1", "entityId": "` + l1 + `", "action": "a", "actionDate": "2024-01-02T03:04:05Z", "samId": 1e3}]`,
	`[{"id": "00000000-0000-4000-8000-0000000000a1", "entityId": "` + l1 + `", "action": "a", "actionDate": "2024-01-02T03:04:05Z", "samId": 01}]`,
	`[{"id": "00000000-0000-4000-8000-0000000000a1", "entityId": "` + l1 + `", "action": "a", "actionDate": "2024-01-02T03:04:05Z", "samId": 9223372036854775808}]`,
	`[{"id": "00000000-0000-4000-8000-0000000000a1", "entityId": "` + l1 + `", "action": "a", "actionDate": "2024-13-02T03:04:05Z", "samId": 1}]`,
	`[{"id": "00000000-0000-4000-8000-0000000000a1", "entityId": null, "action": "a", "actionDate": "2024-01-02T03:04:05Z", "samId": 1}]`,
	`[{"id": "00000000-0000-4000-8000-0000000000a1", "entityId": "` + l1 + `", "action": "a", "actionDate": "2024-01-02T03:04:05Z", "samId": 1, "extra": 1}]`,
	`[{}, {"id": "00000000-0000-4000-8000-0000000000a1"}]`,
	`[{"id": "00000000-0000-4000-8000-0000000000a1", "entityId": "` + l1 + `", "action": "a", "actionDate": "2024-01-02T03:04:05Z", "samId": 1},]`,
	`[{"id": "00000000-0000-4000-8000-0000000000a1", "entityId": "` + l1 + `", "action": "a", "actionDate": "2024-01-02T03:04:05Z", "samId": 1}`,
}

// TestLeanSAMLogAgreesWithJSONv2: where the lean decoder takes a log, it gives exactly what the
// careful path (walker and JSON v2) gives; the plain shape is taken, the others are left alone.
func TestLeanSAMLogAgreesWithJSONv2(t *testing.T) {
	for i, s := range samLogSeeds {
		for k, raw := range elements(s) {
			var got, want domain.SAMActionLog
			ok := leanSAMLog(raw, &got, &interner{})
			if (i == 2 || i == 3 && k == 1) && !ok {
				t.Errorf("seed %d, log %d: the plain shape was not taken: %s", i, k, raw)
			}
			if !ok {
				continue
			}
			w := &walker{dec: jsontext.NewDecoder(bytes.NewReader(raw)), lim: &budget{r: bytes.NewReader(raw), end: int64(len(raw))}}
			checked, err := w.record([]step{{name: samKey}, {index: k}}, 0, maxRecord)
			if err == nil {
				err = decodeRecord(checked, 0, []step{{name: samKey}, {index: k}}, &want)
			}
			if err != nil {
				t.Errorf("seed %d, log %d: lean decoder took what the careful path refuses (%v): %s", i, k, err, raw)
				continue
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("seed %d, log %d (-careful +lean):\n%s", i, k, diff)
			}
		}
	}
}

// elements are the elements of the array s, or none when it is not one.
func elements(s string) [][]byte {
	dec := jsontext.NewDecoder(strings.NewReader(s))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil
	}
	var out [][]byte
	for dec.PeekKind() != ']' && dec.PeekKind() != 0 {
		v, err := dec.ReadValue()
		if err != nil {
			return out
		}
		out = append(out, bytes.Clone(v))
	}
	return out
}

// FuzzLeanSAMLog: the lean decoder never panics, and takes only what the careful path takes,
// giving the same log.
func FuzzLeanSAMLog(f *testing.F) {
	for _, s := range samLogSeeds {
		for _, raw := range elements(s) {
			f.Add(raw)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !jsontext.Value(raw).IsValid() {
			return // jsontext finds each log whole and well-formed before the lean decoder sees it
		}
		var got, want domain.SAMActionLog
		if !leanSAMLog(raw, &got, &interner{}) {
			return
		}
		w := &walker{dec: jsontext.NewDecoder(bytes.NewReader(raw)), lim: &budget{r: bytes.NewReader(raw), end: int64(len(raw))}}
		checked, err := w.record([]step{{name: samKey}, {index: 0}}, 0, maxRecord)
		if err == nil {
			err = decodeRecord(checked, 0, []step{{name: samKey}, {index: 0}}, &want)
		}
		if err != nil {
			t.Fatalf("lean took %s, which the careful path refuses: %v", raw, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s (-careful +lean):\n%s", raw, diff)
		}
	})
}

// auditFile is a file of audit events, given as JSON objects, after a partner.
func auditFile(events ...string) string {
	return `{"partners": [{"id": "` + p1 + `", "name": "P"}], "auditEvents": [` + strings.Join(events, ",\n") + `]}`
}

// auditEventJSON is audit event n (its seq seq), with this outcome and detail (JSON).
func auditEventJSON(n, seq int, outcome, detail string) string {
	return fmt.Sprintf(`{"id": "00000000-0000-4000-8000-00000000050%d", "at": "2026-01-01T00:00:0%dZ", "actorUserId": "%s",
		"action": "a", "targetId": "t", "outcome": %q, "detail": %s, "seq": %d}`, n, n, strings.ToUpper(p1), outcome, detail, seq)
}

func goodEvent(n int) string { return auditEventJSON(n, n, "granted", `"d"`) }

// StreamAuditEvents hands out, one by one in the file's order, the audit events Read keeps, as
// checked; and refuses a file with the error Read gives it: a record that cannot be read before a
// record read earlier that breaks a rule, else the first that breaks one.
func TestStreamAuditEventsAgreesWithRead(t *testing.T) {
	ok := auditFile(goodEvent(3), goodEvent(1), goodEvent(2))
	ds, err := Read(strings.NewReader(ok))
	if err != nil {
		t.Fatal(err)
	}
	var streamed []domain.AuditEvent
	if err := StreamAuditEvents(strings.NewReader(ok), strings.NewReader(ok), func(e domain.AuditEvent) { streamed = append(streamed, e) }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ds.AuditEvents, streamed); diff != "" || streamed[0].ActorUserID != p1 {
		t.Errorf("streamed events differ from Read's (-read +streamed):\n%s", diff)
	}
	for _, c := range []struct {
		name, file string
		handed     int // events handed out: those before the first bad one
	}{
		{"a bad record", auditFile(goodEvent(1), auditEventJSON(2, 2, "maybe", `"d"`)), 1},
		{"two bad records", auditFile(goodEvent(1), auditEventJSON(2, -1, "granted", `"d"`), auditEventJSON(3, 3, "maybe", `"d"`)), 1},
		{"a bad record, then an unreadable one", auditFile(goodEvent(1), auditEventJSON(2, 2, "maybe", `"d"`), auditEventJSON(3, 3, "granted", `7`)), 1},
		{"a duplicate id", auditFile(goodEvent(1), goodEvent(2), goodEvent(1)), 2},
		{"a bad record after the events", `{"auditEvents": [` + goodEvent(1) + `], "users": [{}]}`, 1},
	} {
		_, want := Read(strings.NewReader(c.file))
		handed := 0
		got := StreamAuditEvents(strings.NewReader(c.file), strings.NewReader(c.file), func(domain.AuditEvent) { handed++ })
		if want == nil || got == nil || got.Error() != want.Error() {
			t.Errorf("%s: StreamAuditEvents: %v; Read: %v", c.name, got, want)
		}
		if handed != c.handed {
			t.Errorf("%s: %d events handed out, want %d", c.name, handed, c.handed)
		}
	}
}
