package deviceparams

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ptr[T any](v T) *T { return &v }

// fullInput is a realistic push: every VAR sheet field set, every feature on.
func fullInput(t testing.TB) Input {
	t.Helper()
	s, err := ParseSettings([]byte(validSettings))
	if err != nil {
		t.Fatal(err)
	}
	return Input{
		TerminalID:   "VT/0042 A",
		SerialNumber: ptr("SN-998877"),
		Varsheet: Varsheet{
			MerchantNumber:         ptr("4445012345678"),
			TerminalIDNumber:       ptr("75021674"),
			VNumber:                "V6543210",
			Chain:                  ptr("081960"),
			Agent:                  ptr("000000"),
			StoreNumber:            ptr("0001"),
			MerchantLocationNumber: ptr("00001"),
			CurrencyCode:           ptr("840"),
			TimeZoneCode:           ptr("708"),
			PinDebit:               ptr(true),
			EBTFoodStamps:          ptr(true),
			EBTCash:                ptr(false),
		},
		Settings: s,
		Pricing:  PricingModel{Type: PricingCashDiscount, AdjustmentPercent: ptr("3.500")},
	}
}

func TestDeriveFullPayload(t *testing.T) {
	const want = `{
  "terminalId": "VT/0042 A",
  "serialNumber": "SN-998877",
  "merchant": {
    "merchantNumber": "4445012345678",
    "terminalNumber": "75021674",
    "vNumber": "V6543210",
    "chain": "081960",
    "agent": "000000",
    "storeNumber": "0001",
    "merchantLocationNumber": "00001",
    "currencyCode": "840",
    "timeZoneCode": "708"
  },
  "homeScreen": {"pricingMode": "cash_discount", "adjustmentPercent": "3.500"},
  "tips": {"enabled": true, "presetsPercent": [15, 18.5, 20, 25], "allowCustom": true},
  "tax": {"enabled": true, "ratePercent": "8.250"},
  "avs": {"enabled": true, "mode": "street_and_zip"},
  "receipt": {
    "merchantCopy": true,
    "customerCopy": "prompt",
    "headerLines": ["Joe's Diner", "12 Main St"],
    "footerLines": ["Thank you!"]
  },
  "transactions": {"sale": true, "refund": true, "void": true, "preAuth": false,
    "manualEntry": true, "cashBack": false},
  "pinDebit": true,
  "autoBatch": {"enabled": true, "time": "23:30", "timeZoneCode": "708"},
  "menu": ["credit_sale", "debit_sale", "ebt_food", "refund", "void", "manual_entry",
    "tip_adjust", "batch_close"]
}`
	got, err := json.MarshalIndent(Derive(fullInput(t)), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	// Comparing indented text checks names, values and field order at once.
	var wantIndented bytes.Buffer
	if err := json.Indent(&wantIndented, compact(t, want), "", "  "); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantIndented.String(), string(got)); diff != "" {
		t.Errorf("payload mismatch (-want +got):\n%s", diff)
	}
}

func TestDeriveNullVarsheetFields(t *testing.T) {
	in := fullInput(t)
	in.SerialNumber = nil
	in.Varsheet = Varsheet{VNumber: "V1"}
	got, err := json.Marshal(Derive(in))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"serialNumber":null`,
		`"merchant":{"merchantNumber":null,"terminalNumber":null,"vNumber":"V1","chain":null,` +
			`"agent":null,"storeNumber":null,"merchantLocationNumber":null,"currencyCode":null,"timeZoneCode":null}`,
		`"pinDebit":false`,
		`"autoBatch":{"enabled":true,"time":"23:30","timeZoneCode":null}`,
	} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("payload lacks %s:\n%s", want, got)
		}
	}
}

func TestDerivePricingModes(t *testing.T) {
	tests := []struct {
		pricing PricingModel
		want    HomeScreen
	}{
		{PricingModel{Type: PricingStandard}, HomeScreen{PricingMode: "standard"}},
		{PricingModel{Type: PricingStandard, AdjustmentPercent: ptr("4.000")}, HomeScreen{PricingMode: "standard"}},
		{PricingModel{Type: PricingCashDiscount, AdjustmentPercent: ptr("3.500")},
			HomeScreen{PricingMode: "cash_discount", AdjustmentPercent: ptr("3.500")}},
		{PricingModel{Type: PricingDualPricing, AdjustmentPercent: ptr("4")},
			HomeScreen{PricingMode: "dual_pricing", AdjustmentPercent: ptr("4")}},
		{PricingModel{Type: PricingSurcharge, AdjustmentPercent: ptr("2.99")},
			HomeScreen{PricingMode: "surcharge", AdjustmentPercent: ptr("2.99")}},
	}
	for _, tt := range tests {
		t.Run(tt.pricing.Type, func(t *testing.T) {
			in := fullInput(t)
			in.Pricing = tt.pricing
			if diff := cmp.Diff(tt.want, Derive(in).HomeScreen); diff != "" {
				t.Errorf("homeScreen mismatch (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("standard sends null", func(t *testing.T) {
		in := fullInput(t)
		in.Pricing = PricingModel{Type: PricingStandard, AdjustmentPercent: ptr("4.000")}
		got, _ := json.Marshal(Derive(in).HomeScreen)
		if want := `{"pricingMode":"standard","adjustmentPercent":null}`; string(got) != want {
			t.Errorf("homeScreen = %s, want %s", got, want)
		}
	})
}

func TestDerivePinDebit(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   *bool
		want bool
	}{{"null", nil, false}, {"false", ptr(false), false}, {"true", ptr(true), true}} {
		t.Run(tt.name, func(t *testing.T) {
			in := fullInput(t)
			in.Varsheet.PinDebit = tt.in
			if got := Derive(in).PinDebit; got != tt.want {
				t.Errorf("pinDebit = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDeriveMenu(t *testing.T) {
	tests := []struct {
		name string
		set  func(*Input)
		want []string
	}{
		{"nothing on", func(*Input) {}, []string{"batch_close"}},
		{"sale", func(in *Input) { in.Settings.Transactions.Sale = true },
			[]string{"credit_sale", "batch_close"}},
		{"sale with pin debit", func(in *Input) {
			in.Settings.Transactions.Sale = true
			in.Varsheet.PinDebit = ptr(true)
		}, []string{"credit_sale", "debit_sale", "batch_close"}},
		{"sale with pin debit off", func(in *Input) {
			in.Settings.Transactions.Sale = true
			in.Varsheet.PinDebit = ptr(false)
		}, []string{"credit_sale", "batch_close"}},
		{"pin debit without sale", func(in *Input) { in.Varsheet.PinDebit = ptr(true) },
			[]string{"batch_close"}},
		{"ebt food", func(in *Input) { in.Varsheet.EBTFoodStamps = ptr(true) },
			[]string{"ebt_food", "batch_close"}},
		{"ebt food off", func(in *Input) { in.Varsheet.EBTFoodStamps = ptr(false) },
			[]string{"batch_close"}},
		{"ebt cash", func(in *Input) { in.Varsheet.EBTCash = ptr(true) },
			[]string{"ebt_cash", "batch_close"}},
		{"ebt cash off", func(in *Input) { in.Varsheet.EBTCash = ptr(false) },
			[]string{"batch_close"}},
		{"refund", func(in *Input) { in.Settings.Transactions.Refund = true },
			[]string{"refund", "batch_close"}},
		{"void", func(in *Input) { in.Settings.Transactions.Void = true },
			[]string{"void", "batch_close"}},
		{"pre-auth", func(in *Input) { in.Settings.Transactions.PreAuth = true },
			[]string{"pre_auth", "batch_close"}},
		{"manual entry", func(in *Input) { in.Settings.Transactions.ManualEntry = true },
			[]string{"manual_entry", "batch_close"}},
		{"cash back with pin debit", func(in *Input) {
			in.Settings.Transactions.CashBack = true
			in.Varsheet.PinDebit = ptr(true)
		}, []string{"cash_back", "batch_close"}},
		{"cash back without pin debit", func(in *Input) { in.Settings.Transactions.CashBack = true },
			[]string{"batch_close"}},
		{"cash back with pin debit off", func(in *Input) {
			in.Settings.Transactions.CashBack = true
			in.Varsheet.PinDebit = ptr(false)
		}, []string{"batch_close"}},
		{"tips", func(in *Input) { in.Settings.Tips.Enabled = true },
			[]string{"tip_adjust", "batch_close"}},
		{"tip presets without tips", func(in *Input) { in.Settings.Tips.PresetsPercent = []float64{15} },
			[]string{"batch_close"}},
		{"everything, in documented order", func(in *Input) {
			in.Settings.Transactions = Transactions{true, true, true, true, true, true}
			in.Settings.Tips.Enabled = true
			in.Varsheet.PinDebit, in.Varsheet.EBTFoodStamps, in.Varsheet.EBTCash = ptr(true), ptr(true), ptr(true)
		}, []string{"credit_sale", "debit_sale", "ebt_food", "ebt_cash", "refund", "void",
			"pre_auth", "manual_entry", "cash_back", "tip_adjust", "batch_close"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{TerminalID: "T1", Settings: Settings{
				AVS:       AVS{Mode: AVSModeZip},
				AutoBatch: AutoBatch{Time: "02:00"},
			}}
			tt.set(&in)
			if diff := cmp.Diff(tt.want, Derive(in).Menu); diff != "" {
				t.Errorf("menu mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeriveListsAreOwnedAndNeverNull(t *testing.T) {
	in := Input{Pricing: PricingModel{Type: PricingStandard}}
	got, _ := json.Marshal(Derive(in))
	for _, want := range []string{`"presetsPercent":[]`, `"headerLines":[]`, `"footerLines":[]`} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("payload lacks %s: %s", want, got)
		}
	}

	full := fullInput(t)
	p := Derive(full)
	p.Tips.PresetsPercent[0] = 99
	p.Receipt.HeaderLines[0] = "changed"
	if full.Settings.Tips.PresetsPercent[0] != 15 || full.Settings.Receipt.HeaderLines[0] != "Joe's Diner" {
		t.Error("changing the payload changed the settings it was derived from")
	}
}

func BenchmarkDerive(b *testing.B) {
	in := fullInput(b)
	for b.Loop() {
		if _, err := json.Marshal(Derive(in)); err != nil {
			b.Fatal(err)
		}
	}
}

func compact(t testing.TB, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
