package deviceparams

// Varsheet holds the VAR sheet fields the payload uses.
type Varsheet struct {
	MerchantNumber         *string
	TerminalIDNumber       *string
	VNumber                string
	Chain                  *string
	Agent                  *string
	StoreNumber            *string
	MerchantLocationNumber *string
	CurrencyCode           *string
	TimeZoneCode           *string
	PinDebit               *bool
	EBTFoodStamps          *bool
	EBTCash                *bool
}

// Input is everything one push is derived from.
type Input struct {
	TerminalID   string  // the equipment's vendorTerminalId
	SerialNumber *string // the inventory unit's, if any
	Varsheet     Varsheet
	Settings     Settings
	Pricing      PricingModel
}

// Payload is the JSON body sent to the gateway. Field order follows the
// payload table of docs/device-parameters.md.
type Payload struct {
	TerminalID   string            `json:"terminalId"`
	SerialNumber *string           `json:"serialNumber"`
	Merchant     Merchant          `json:"merchant"`
	HomeScreen   HomeScreen        `json:"homeScreen"`
	Tips         Tips              `json:"tips"`
	Tax          Tax               `json:"tax"`
	AVS          AVS               `json:"avs"`
	Receipt      Receipt           `json:"receipt"`
	Transactions Transactions      `json:"transactions"`
	PinDebit     bool              `json:"pinDebit"`
	AutoBatch    AutoBatchSchedule `json:"autoBatch"`
	Menu         []string          `json:"menu"`
}

// Merchant identifies the merchant account to the gateway, from the VAR sheet.
type Merchant struct {
	MerchantNumber         *string `json:"merchantNumber"`
	TerminalNumber         *string `json:"terminalNumber"`
	VNumber                string  `json:"vNumber"`
	Chain                  *string `json:"chain"`
	Agent                  *string `json:"agent"`
	StoreNumber            *string `json:"storeNumber"`
	MerchantLocationNumber *string `json:"merchantLocationNumber"`
	CurrencyCode           *string `json:"currencyCode"`
	TimeZoneCode           *string `json:"timeZoneCode"`
}

// HomeScreen tells the terminal how to present prices.
type HomeScreen struct {
	PricingMode       string  `json:"pricingMode"`
	AdjustmentPercent *string `json:"adjustmentPercent"`
}

// AutoBatchSchedule is the file build's auto-batch timer with the time zone
// its time is meant in, which only the VAR sheet knows.
type AutoBatchSchedule struct {
	Enabled      bool    `json:"enabled"`
	Time         string  `json:"time"`
	TimeZoneCode *string `json:"timeZoneCode"`
}

// POS menu codes.
const (
	MenuCreditSale  = "credit_sale"
	MenuDebitSale   = "debit_sale"
	MenuEBTFood     = "ebt_food"
	MenuEBTCash     = "ebt_cash"
	MenuRefund      = "refund"
	MenuVoid        = "void"
	MenuPreAuth     = "pre_auth"
	MenuManualEntry = "manual_entry"
	MenuCashBack    = "cash_back"
	MenuTipAdjust   = "tip_adjust"
	MenuBatchClose  = "batch_close"
)

// Derive builds the gateway payload. It trusts its input to have been
// validated (ParseSettings, ValidatePricing) and shares no slices with it.
func Derive(in Input) Payload {
	v, s := in.Varsheet, in.Settings
	return Payload{
		TerminalID:   in.TerminalID,
		SerialNumber: in.SerialNumber,
		Merchant: Merchant{
			MerchantNumber:         v.MerchantNumber,
			TerminalNumber:         v.TerminalIDNumber,
			VNumber:                v.VNumber,
			Chain:                  v.Chain,
			Agent:                  v.Agent,
			StoreNumber:            v.StoreNumber,
			MerchantLocationNumber: v.MerchantLocationNumber,
			CurrencyCode:           v.CurrencyCode,
			TimeZoneCode:           v.TimeZoneCode,
		},
		HomeScreen: homeScreen(in.Pricing),
		Tips: Tips{
			Enabled:        s.Tips.Enabled,
			PresetsPercent: cloneNonNil(s.Tips.PresetsPercent),
			AllowCustom:    s.Tips.AllowCustom,
		},
		Tax: s.Tax,
		AVS: s.AVS,
		Receipt: Receipt{
			MerchantCopy: s.Receipt.MerchantCopy,
			CustomerCopy: s.Receipt.CustomerCopy,
			HeaderLines:  cloneNonNil(s.Receipt.HeaderLines),
			FooterLines:  cloneNonNil(s.Receipt.FooterLines),
		},
		Transactions: s.Transactions,
		PinDebit:     isTrue(v.PinDebit),
		AutoBatch: AutoBatchSchedule{
			Enabled:      s.AutoBatch.Enabled,
			Time:         s.AutoBatch.Time,
			TimeZoneCode: v.TimeZoneCode,
		},
		Menu: menu(s, v),
	}
}

func homeScreen(p PricingModel) HomeScreen {
	h := HomeScreen{PricingMode: p.Type}
	if p.Type != PricingStandard && p.AdjustmentPercent != nil {
		adj := *p.AdjustmentPercent
		h.AdjustmentPercent = &adj
	}
	return h
}

// menu lists the POS menu codes in the order docs/device-parameters.md gives,
// which is the order the terminal shows them in.
func menu(s Settings, v Varsheet) []string {
	tx, pin := s.Transactions, isTrue(v.PinDebit)
	rules := [...]struct {
		code string
		on   bool
	}{
		{MenuCreditSale, tx.Sale},
		{MenuDebitSale, tx.Sale && pin},
		{MenuEBTFood, isTrue(v.EBTFoodStamps)},
		{MenuEBTCash, isTrue(v.EBTCash)},
		{MenuRefund, tx.Refund},
		{MenuVoid, tx.Void},
		{MenuPreAuth, tx.PreAuth},
		{MenuManualEntry, tx.ManualEntry},
		{MenuCashBack, tx.CashBack && pin},
		{MenuTipAdjust, s.Tips.Enabled},
		{MenuBatchClose, true},
	}
	codes := make([]string, 0, len(rules))
	for _, r := range rules {
		if r.on {
			codes = append(codes, r.code)
		}
	}
	return codes
}

// isTrue counts a VAR sheet's unknown (null) flag as off.
func isTrue(b *bool) bool { return b != nil && *b }

// cloneNonNil copies s so the payload owns its lists, and turns nil into an
// empty list so that the gateway always receives an array, never null.
func cloneNonNil[T any](s []T) []T {
	return append(make([]T, 0, len(s)), s...)
}
