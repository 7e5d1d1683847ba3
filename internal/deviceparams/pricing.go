package deviceparams

import "strings"

// Pricing model types.
const (
	PricingStandard     = "standard"
	PricingCashDiscount = "cash_discount"
	PricingDualPricing  = "dual_pricing"
	PricingSurcharge    = "surcharge"
)

// PricingModel is the part of a merchant's active pricing model that the
// terminal's home screen shows.
type PricingModel struct {
	Type string
	// AdjustmentPercent is a decimal string such as "3.500"; nil or ignored
	// for standard pricing, which adjusts nothing.
	AdjustmentPercent *string
}

const percentProblem = `must be a decimal string from 0 to 100, like "8.250"`

// ValidatePricing checks a pricing model's type and adjustment percent. Errors
// are *FieldError with paths "type" or "adjustmentPercent". For standard
// pricing the percent is not looked at: it is never sent.
func ValidatePricing(typ string, adj *string) error {
	switch typ {
	case PricingStandard:
		return nil
	case PricingCashDiscount, PricingDualPricing, PricingSurcharge:
	default:
		return &FieldError{Path: "type", Problem: "must be one of " + strings.Join([]string{
			PricingStandard, PricingCashDiscount, PricingDualPricing, PricingSurcharge}, ", ")}
	}
	switch {
	case adj == nil:
		return &FieldError{Path: "adjustmentPercent", Problem: "required unless type is standard"}
	case !validPercent(*adj):
		return &FieldError{Path: "adjustmentPercent", Problem: percentProblem}
	}
	return nil
}

// validPercent reports whether s is a plain decimal (digits, optionally a dot
// and more digits) from 0 to 100. It compares digits rather than parsing a
// float, so that "100.0000000000000001" is not rounded into range.
func validPercent(s string) bool {
	whole, frac, hasDot := strings.Cut(s, ".")
	if !allDigits(whole) || (hasDot && !allDigits(frac)) {
		return false
	}
	whole = strings.TrimLeft(whole, "0")
	switch {
	case len(whole) < 3:
		return true
	case whole == "100":
		return strings.Trim(frac, "0") == ""
	}
	return false
}

// allDigits reports whether s is one or more ASCII digits.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
