package deviceparams

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// validSettings is a file build's settings in documented field order, so that
// re-encoding must reproduce it byte for byte once compacted.
const validSettings = `{
  "tips": {"enabled": true, "presetsPercent": [15, 18.5, 20, 25], "allowCustom": true},
  "tax": {"enabled": true, "ratePercent": "8.250"},
  "avs": {"enabled": true, "mode": "street_and_zip"},
  "receipt": {"merchantCopy": true, "customerCopy": "prompt",
    "headerLines": ["Joe's Diner", "12 Main St"], "footerLines": ["Thank you!"]},
  "transactions": {"sale": true, "refund": true, "void": true, "preAuth": false,
    "manualEntry": true, "cashBack": false},
  "autoBatch": {"enabled": true, "time": "23:30"}
}`

func TestParseSettingsRoundTrip(t *testing.T) {
	s, err := ParseSettings([]byte(validSettings))
	if err != nil {
		t.Fatalf("ParseSettings: %v", err)
	}
	got, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, []byte(validSettings)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.String(), string(got)); diff != "" {
		t.Errorf("re-encoded settings differ (-want +got):\n%s", diff)
	}
}

func TestParseSettingsEmptyListsStayLists(t *testing.T) {
	raw := withSettings(t, func(m map[string]any) {
		field(m, "tips")["presetsPercent"] = []any{}
		field(m, "receipt")["headerLines"] = []any{}
		field(m, "receipt")["footerLines"] = []any{}
	})
	s, err := ParseSettings(raw)
	if err != nil {
		t.Fatalf("ParseSettings: %v", err)
	}
	got, _ := json.Marshal(s)
	for _, want := range []string{`"presetsPercent":[]`, `"headerLines":[]`, `"footerLines":[]`} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("re-encoded settings lack %s: %s", want, got)
		}
	}
}

func TestParseSettingsAccepts(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(map[string]any)
	}{
		{"no tip presets", func(m map[string]any) { field(m, "tips")["presetsPercent"] = []any{} }},
		{"tip preset of 100", func(m map[string]any) { field(m, "tips")["presetsPercent"] = []any{100} }},
		{"tiny tip preset", func(m map[string]any) { field(m, "tips")["presetsPercent"] = []any{0.01} }},
		{"rate 0", func(m map[string]any) { field(m, "tax")["ratePercent"] = "0" }},
		{"rate 100.000", func(m map[string]any) { field(m, "tax")["ratePercent"] = "100.000" }},
		{"rate 99.999", func(m map[string]any) { field(m, "tax")["ratePercent"] = "99.999" }},
		{"avs zip", func(m map[string]any) { field(m, "avs")["mode"] = "zip" }},
		{"customer copy always", func(m map[string]any) { field(m, "receipt")["customerCopy"] = "always" }},
		{"customer copy never", func(m map[string]any) { field(m, "receipt")["customerCopy"] = "never" }},
		{"batch at midnight", func(m map[string]any) { field(m, "autoBatch")["time"] = "00:00" }},
		{"batch at 23:59", func(m map[string]any) { field(m, "autoBatch")["time"] = "23:59" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseSettings(withSettings(t, tt.mutate)); err != nil {
				t.Errorf("ParseSettings: %v", err)
			}
		})
	}
}

func TestParseSettingsRejects(t *testing.T) {
	set := func(section, name string, v any) func(map[string]any) {
		return func(m map[string]any) { field(m, section)[name] = v }
	}
	remove := func(section, name string) func(map[string]any) {
		return func(m map[string]any) { delete(field(m, section), name) }
	}
	tests := []struct {
		name   string
		raw    string               // used when set
		mutate func(map[string]any) // else applied to the valid settings
		want   FieldError
	}{
		{name: "not JSON", raw: `{"tips":`, want: FieldError{"", "invalid JSON"}},
		{name: "trailing data", raw: `{} {}`, want: FieldError{"", "invalid JSON"}},
		{name: "not an object", raw: `[]`, want: FieldError{"", "must be an object"}},
		{name: "null", raw: `null`, want: FieldError{"", "must be an object"}},
		{name: "duplicate section", raw: `{"tips": {}, "tips": {}}`, want: FieldError{"tips", "duplicate field"}},
		{name: "unknown section", mutate: func(m map[string]any) { m["surcharge"] = true },
			want: FieldError{"surcharge", "unknown field"}},
		{name: "missing section", mutate: func(m map[string]any) { delete(m, "autoBatch") },
			want: FieldError{"autoBatch", "required"}},
		{name: "section null", mutate: func(m map[string]any) { m["tips"] = nil },
			want: FieldError{"tips", "must be an object"}},
		{name: "section wrong type", mutate: func(m map[string]any) { m["tax"] = "8.25" },
			want: FieldError{"tax", "must be an object"}},
		{name: "unknown nested field", mutate: set("tips", "maxPercent", 30),
			want: FieldError{"tips.maxPercent", "unknown field"}},
		{name: "missing nested field", mutate: remove("tips", "enabled"),
			want: FieldError{"tips.enabled", "required"}},
		{name: "boolean as string", mutate: set("tips", "enabled", "true"),
			want: FieldError{"tips.enabled", "must be a boolean"}},
		{name: "boolean null", mutate: set("avs", "enabled", nil),
			want: FieldError{"avs.enabled", "must be a boolean"}},
		{name: "boolean as number", mutate: set("transactions", "void", 1),
			want: FieldError{"transactions.void", "must be a boolean"}},
		{name: "missing transaction toggle", mutate: remove("transactions", "cashBack"),
			want: FieldError{"transactions.cashBack", "required"}},
		{name: "presets null", mutate: set("tips", "presetsPercent", nil),
			want: FieldError{"tips.presetsPercent", "must be an array"}},
		{name: "presets not a list", mutate: set("tips", "presetsPercent", 15),
			want: FieldError{"tips.presetsPercent", "must be an array"}},
		{name: "five presets", mutate: set("tips", "presetsPercent", []any{10, 15, 18, 20, 25}),
			want: FieldError{"tips.presetsPercent", "must hold at most 4 values"}},
		{name: "preset zero", mutate: set("tips", "presetsPercent", []any{10, 15, 0}),
			want: FieldError{"tips.presetsPercent[2]", "must be greater than 0 and at most 100"}},
		{name: "preset negative", mutate: set("tips", "presetsPercent", []any{-5}),
			want: FieldError{"tips.presetsPercent[0]", "must be greater than 0 and at most 100"}},
		{name: "preset over 100", mutate: set("tips", "presetsPercent", []any{15, 100.5}),
			want: FieldError{"tips.presetsPercent[1]", "must be greater than 0 and at most 100"}},
		{name: "preset as string", mutate: set("tips", "presetsPercent", []any{15, "18"}),
			want: FieldError{"tips.presetsPercent[1]", "must be a number"}},
		{name: "preset null", mutate: set("tips", "presetsPercent", []any{nil}),
			want: FieldError{"tips.presetsPercent[0]", "must be a number"}},
		{name: "rate as number", mutate: set("tax", "ratePercent", 8.25),
			want: FieldError{"tax.ratePercent", "must be a string"}},
		{name: "rate null", mutate: set("tax", "ratePercent", nil),
			want: FieldError{"tax.ratePercent", "must be a string"}},
		{name: "rate empty", mutate: set("tax", "ratePercent", ""),
			want: FieldError{"tax.ratePercent", percentProblem}},
		{name: "rate with trailing dot", mutate: set("tax", "ratePercent", "8."),
			want: FieldError{"tax.ratePercent", percentProblem}},
		{name: "rate without whole part", mutate: set("tax", "ratePercent", ".5"),
			want: FieldError{"tax.ratePercent", percentProblem}},
		{name: "rate with comma", mutate: set("tax", "ratePercent", "8,25"),
			want: FieldError{"tax.ratePercent", percentProblem}},
		{name: "rate negative", mutate: set("tax", "ratePercent", "-1"),
			want: FieldError{"tax.ratePercent", percentProblem}},
		{name: "rate with space", mutate: set("tax", "ratePercent", " 8.25"),
			want: FieldError{"tax.ratePercent", percentProblem}},
		{name: "rate exponent", mutate: set("tax", "ratePercent", "1e1"),
			want: FieldError{"tax.ratePercent", percentProblem}},
		{name: "rate just over 100", mutate: set("tax", "ratePercent", "100.001"),
			want: FieldError{"tax.ratePercent", percentProblem}},
		{name: "rate 101", mutate: set("tax", "ratePercent", "101"),
			want: FieldError{"tax.ratePercent", percentProblem}},
		{name: "avs mode unknown", mutate: set("avs", "mode", "street"),
			want: FieldError{"avs.mode", "must be one of zip, street_and_zip"}},
		{name: "avs mode wrong case", mutate: set("avs", "mode", "ZIP"),
			want: FieldError{"avs.mode", "must be one of zip, street_and_zip"}},
		{name: "customer copy unknown", mutate: set("receipt", "customerCopy", "sometimes"),
			want: FieldError{"receipt.customerCopy", "must be one of always, prompt, never"}},
		{name: "header line not a string", mutate: set("receipt", "headerLines", []any{"ok", 5}),
			want: FieldError{"receipt.headerLines[1]", "must be a string"}},
		{name: "footer lines a string", mutate: set("receipt", "footerLines", "Thanks"),
			want: FieldError{"receipt.footerLines", "must be an array"}},
		{name: "batch at 24:00", mutate: set("autoBatch", "time", "24:00"),
			want: FieldError{"autoBatch.time", "must be a 24 h time HH:MM, from 00:00 to 23:59"}},
		{name: "batch minute 60", mutate: set("autoBatch", "time", "12:60"),
			want: FieldError{"autoBatch.time", "must be a 24 h time HH:MM, from 00:00 to 23:59"}},
		{name: "batch single-digit hour", mutate: set("autoBatch", "time", "7:30"),
			want: FieldError{"autoBatch.time", "must be a 24 h time HH:MM, from 00:00 to 23:59"}},
		{name: "batch with seconds", mutate: set("autoBatch", "time", "07:30:00"),
			want: FieldError{"autoBatch.time", "must be a 24 h time HH:MM, from 00:00 to 23:59"}},
		{name: "batch wrong separator", mutate: set("autoBatch", "time", "07.30"),
			want: FieldError{"autoBatch.time", "must be a 24 h time HH:MM, from 00:00 to 23:59"}},
		{name: "first problem in document order wins",
			mutate: func(m map[string]any) {
				field(m, "autoBatch")["time"] = "25:00"
				field(m, "avs")["mode"] = "nope"
			},
			want: FieldError{"avs.mode", "must be one of zip, street_and_zip"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := []byte(tt.raw)
			if tt.mutate != nil {
				raw = withSettings(t, tt.mutate)
			}
			_, err := ParseSettings(raw)
			var got *FieldError
			if !errors.As(err, &got) {
				t.Fatalf("ParseSettings error = %v, want a *FieldError", err)
			}
			if diff := cmp.Diff(tt.want, *got); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFieldError(t *testing.T) {
	tests := []struct {
		err    FieldError
		prefix string
		want   string
	}{
		{FieldError{"tips.presetsPercent[2]", "must be a number"}, "",
			"tips.presetsPercent[2]: must be a number"},
		{FieldError{"tips.presetsPercent[2]", "must be a number"}, "fileBuilds[3].settings",
			"fileBuilds[3].settings.tips.presetsPercent[2]: must be a number"},
		{FieldError{"", "must be an object"}, "fileBuilds[0].settings",
			"fileBuilds[0].settings: must be an object"},
		{FieldError{"", "invalid JSON"}, "", "invalid JSON"},
		{FieldError{"[1]", "must be a string"}, "lines", "lines[1]: must be a string"},
	}
	for _, tt := range tests {
		if got := tt.err.Under(tt.prefix).Error(); got != tt.want {
			t.Errorf("%+v.Under(%q).Error() = %q, want %q", tt.err, tt.prefix, got, tt.want)
		}
	}
}

// withSettings returns validSettings after mutate has changed its decoded form.
func withSettings(t testing.TB, mutate func(map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(validSettings), &m); err != nil {
		t.Fatal(err)
	}
	mutate(m)
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func field(m map[string]any, section string) map[string]any {
	return m[section].(map[string]any)
}
