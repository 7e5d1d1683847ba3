package deviceparams

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidatePricing(t *testing.T) {
	pct := func(s string) *string { return &s }
	tests := []struct {
		name string
		typ  string
		adj  *string
		want *FieldError
	}{
		{"standard without percent", PricingStandard, nil, nil},
		{"standard ignores a percent", PricingStandard, pct("3.5"), nil},
		{"standard ignores a bad percent", PricingStandard, pct("lots"), nil},
		{"cash discount", PricingCashDiscount, pct("3.500"), nil},
		{"dual pricing", PricingDualPricing, pct("4"), nil},
		{"surcharge", PricingSurcharge, pct("2.75"), nil},
		{"surcharge of 0", PricingSurcharge, pct("0.000"), nil},
		{"cash discount without percent", PricingCashDiscount, nil,
			&FieldError{"adjustmentPercent", "required unless type is standard"}},
		{"dual pricing without percent", PricingDualPricing, nil,
			&FieldError{"adjustmentPercent", "required unless type is standard"}},
		{"surcharge with bad percent", PricingSurcharge, pct("3%"),
			&FieldError{"adjustmentPercent", percentProblem}},
		{"cash discount over 100", PricingCashDiscount, pct("100.5"),
			&FieldError{"adjustmentPercent", percentProblem}},
		{"unknown type", "tiered", pct("1"),
			&FieldError{"type", "must be one of standard, cash_discount, dual_pricing, surcharge"}},
		{"type wrong case", "Standard", nil,
			&FieldError{"type", "must be one of standard, cash_discount, dual_pricing, surcharge"}},
		{"empty type", "", nil,
			&FieldError{"type", "must be one of standard, cash_discount, dual_pricing, surcharge"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidatePricing(tt.typ, tt.adj)
			var got *FieldError
			if err != nil && !errors.As(err, &got) {
				t.Fatalf("error %v is not a *FieldError", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ValidatePricing(%q) mismatch (-want +got):\n%s", tt.typ, diff)
			}
		})
	}
}

func TestValidPercent(t *testing.T) {
	tests := map[string]bool{
		"0": true, "8": true, "8.250": true, "08.25": true, "99.999": true,
		"100": true, "100.0": true, "100.000": true, "000100": true,
		"100.0000000000000001": false, "100.001": false, "101": false, "1000": false,
		"": false, ".": false, "8.": false, ".5": false, "-1": false, "+1": false,
		"1e2": false, "8.2.5": false, " 8": false, "8 ": false, "８": false,
	}
	for in, want := range tests {
		if got := validPercent(in); got != want {
			t.Errorf("validPercent(%q) = %v, want %v", in, got, want)
		}
	}
}
