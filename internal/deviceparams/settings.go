// Package deviceparams derives the parameters that operation 4.1 pushes to a
// terminal's gateway: the file build settings, the VAR sheet and the merchant's
// active pricing model go in, the gateway payload comes out. Nothing here does
// I/O, so the rules can be tested and benchmarked on their own.
package deviceparams

import (
	"encoding/json"
	"fmt"
)

// Settings is a file build's settings, exactly as docs/device-parameters.md lists
// them. Field order matches the document so that re-encoding reads the same.
type Settings struct {
	Tips         Tips         `json:"tips"`
	Tax          Tax          `json:"tax"`
	AVS          AVS          `json:"avs"`
	Receipt      Receipt      `json:"receipt"`
	Transactions Transactions `json:"transactions"`
	AutoBatch    AutoBatch    `json:"autoBatch"`
}

type Tips struct {
	Enabled        bool      `json:"enabled"`
	PresetsPercent []float64 `json:"presetsPercent"`
	AllowCustom    bool      `json:"allowCustom"`
}

type Tax struct {
	Enabled bool `json:"enabled"`
	// RatePercent stays a decimal string so that "8.250" reaches the
	// terminal with the precision the file build gave it.
	RatePercent string `json:"ratePercent"`
}

type AVS struct {
	Enabled bool   `json:"enabled"`
	Mode    string `json:"mode"`
}

type Receipt struct {
	MerchantCopy bool     `json:"merchantCopy"`
	CustomerCopy string   `json:"customerCopy"`
	HeaderLines  []string `json:"headerLines"`
	FooterLines  []string `json:"footerLines"`
}

type Transactions struct {
	Sale        bool `json:"sale"`
	Refund      bool `json:"refund"`
	Void        bool `json:"void"`
	PreAuth     bool `json:"preAuth"`
	ManualEntry bool `json:"manualEntry"`
	CashBack    bool `json:"cashBack"`
}

type AutoBatch struct {
	Enabled bool `json:"enabled"`
	// Time is "HH:MM", 24 h, in the VAR sheet's time zone.
	Time string `json:"time"`
}

// AVS modes.
const (
	AVSModeZip          = "zip"
	AVSModeStreetAndZip = "street_and_zip"
)

// Receipt customer copy policies.
const (
	CustomerCopyAlways = "always"
	CustomerCopyPrompt = "prompt"
	CustomerCopyNever  = "never"
)

// maxTipPresets is the number of preset buttons a terminal's tip screen has.
const maxTipPresets = 4

// ParseSettings decodes and validates a file build's settings. Decoding is
// strict: every documented field must be present with its JSON type, and any
// other field is refused, because a typo in a file build would otherwise
// silently turn a feature off on a merchant's terminal. Errors are
// *FieldError with a path relative to the settings object.
func ParseSettings(raw []byte) (Settings, error) {
	if !json.Valid(raw) {
		return Settings{}, &FieldError{Problem: "invalid JSON"}
	}
	root := openRoot(raw, "tips", "tax", "avs", "receipt", "transactions", "autoBatch")
	s := Settings{
		Tips:         parseTips(root),
		Tax:          parseTax(root),
		AVS:          parseAVS(root),
		Receipt:      parseReceipt(root),
		Transactions: parseTransactions(root),
		AutoBatch:    parseAutoBatch(root),
	}
	if err := root.Err(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

func parseTips(parent *reader) Tips {
	r := parent.object("tips", "enabled", "presetsPercent", "allowCustom")
	t := Tips{
		Enabled:        r.bool("enabled"),
		PresetsPercent: r.numbers("presetsPercent"),
		AllowCustom:    r.bool("allowCustom"),
	}
	if len(t.PresetsPercent) > maxTipPresets {
		r.fail("presetsPercent", fmt.Sprintf("must hold at most %d values", maxTipPresets))
	}
	for i, p := range t.PresetsPercent {
		if !(p > 0 && p <= 100) {
			r.fail(fmt.Sprintf("presetsPercent[%d]", i), "must be greater than 0 and at most 100")
		}
	}
	return t
}

func parseTax(parent *reader) Tax {
	r := parent.object("tax", "enabled", "ratePercent")
	t := Tax{Enabled: r.bool("enabled"), RatePercent: r.string("ratePercent")}
	if !validPercent(t.RatePercent) {
		r.fail("ratePercent", percentProblem)
	}
	return t
}

func parseAVS(parent *reader) AVS {
	r := parent.object("avs", "enabled", "mode")
	return AVS{
		Enabled: r.bool("enabled"),
		Mode:    r.enum("mode", AVSModeZip, AVSModeStreetAndZip),
	}
}

func parseReceipt(parent *reader) Receipt {
	r := parent.object("receipt", "merchantCopy", "customerCopy", "headerLines", "footerLines")
	return Receipt{
		MerchantCopy: r.bool("merchantCopy"),
		CustomerCopy: r.enum("customerCopy", CustomerCopyAlways, CustomerCopyPrompt, CustomerCopyNever),
		HeaderLines:  r.strings("headerLines"),
		FooterLines:  r.strings("footerLines"),
	}
}

func parseTransactions(parent *reader) Transactions {
	r := parent.object("transactions", "sale", "refund", "void", "preAuth", "manualEntry", "cashBack")
	return Transactions{
		Sale:        r.bool("sale"),
		Refund:      r.bool("refund"),
		Void:        r.bool("void"),
		PreAuth:     r.bool("preAuth"),
		ManualEntry: r.bool("manualEntry"),
		CashBack:    r.bool("cashBack"),
	}
}

func parseAutoBatch(parent *reader) AutoBatch {
	r := parent.object("autoBatch", "enabled", "time")
	a := AutoBatch{Enabled: r.bool("enabled"), Time: r.string("time")}
	if !validClock(a.Time) {
		r.fail("time", "must be a 24 h time HH:MM, from 00:00 to 23:59")
	}
	return a
}

// validClock reports whether s is "HH:MM" between 00:00 and 23:59.
func validClock(s string) bool {
	if len(s) != 5 || s[2] != ':' || !allDigits(s[:2]) || !allDigits(s[3:]) {
		return false
	}
	return s[:2] <= "23" && s[3:] <= "59"
}
