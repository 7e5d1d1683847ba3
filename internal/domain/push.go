package domain

import "encoding/json"

// PushSource is everything operation 4.1 reads about a line item: the line item as the API shows
// it, and the inputs of the device parameters. Absent inputs are nil.
type PushSource struct {
	MerchantID ID
	Workflow   string
	View       LineItemView
	FileBuild  json.RawMessage
	Pricing    *PricingModel
}
