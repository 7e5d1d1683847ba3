package domain

import (
	"encoding/json"
	"time"
)

// PushSource is everything operation 4.1 reads about a line item: the line item as the API shows
// it, and the inputs of the device parameters. Absent inputs are nil.
type PushSource struct {
	MerchantID ID
	Workflow   string
	View       LineItemView
	FileBuild  json.RawMessage
	Pricing    *PricingModel
}

// PushRecord is a push that may reach the gateway and has no note yet: written before its first
// request to the gateway, its Attempts counted before each, and replaced by the push's note once
// it has one. A record left behind (its process stopped, or the database refused the note) is
// noted by the next push of its line item, or once its lease has expired.
type PushRecord struct {
	LineItemID ID
	// Holder is the push's lease holder: only it counts attempts on the record and notes it.
	Holder     string
	MerchantID ID
	UserID     ID
	TerminalID string
	StartedAt  time.Time
	// Attempts is how many requests to the gateway the push had begun.
	Attempts int
}
