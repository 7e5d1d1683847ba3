// Package dataset is the dataset file of docs/dataset.md: one JSON object whose keys hold the
// records of the back office. A file goes to the store in two readings: ReadFile (read.go)
// decodes and checks it on its own (syntax, limits, types, enums, uuids, duplicates within the
// file), keeping every record but the SAM action logs (samlogs.go); ImportFile (transfer.go) adds
// the records to the store in one transaction, checking references and duplicates against the
// database, and reads the SAM logs again from the file a chunk at a time (stream.go). Read and
// Import do the same for a dataset held in memory, Write encodes one, and Export reads the store
// back as one. Every kind of record is listed once, in kinds (kinds.go), with its rules
// (check.go).
package dataset

import (
	"bufio"
	"encoding/json"
	"io"

	"backoffice/internal/domain"
)

// Dataset holds every kind of record, in the order the keys are written.
type Dataset struct {
	Partners          []domain.Partner          `json:"partners,omitempty"`
	Users             []domain.User             `json:"users,omitempty"`
	APIKeys           []domain.APIKey           `json:"apiKeys,omitempty"`
	Sessions          []domain.Session          `json:"sessions,omitempty"`
	CardPlans         []domain.CardPlan         `json:"cardPlans,omitempty"`
	Leads             []domain.Lead             `json:"leads,omitempty"`
	Principals        []domain.Principal        `json:"principals,omitempty"`
	Merchants         []domain.Merchant         `json:"merchants,omitempty"`
	MerchantDocuments []domain.MerchantDocument `json:"merchantDocuments,omitempty"`
	PricingModels     []domain.PricingModel     `json:"pricingModels,omitempty"`
	DeploymentModels  []domain.DeploymentModel  `json:"deploymentModels,omitempty"`
	DeploymentOrders  []domain.DeploymentOrder  `json:"deploymentOrders,omitempty"`
	InventoryUnits    []domain.InventoryUnit    `json:"inventoryUnits,omitempty"`
	Equipment         []domain.Equipment        `json:"equipment,omitempty"`
	Varsheets         []domain.Varsheet         `json:"varsheets,omitempty"`
	LineItems         []domain.LineItem         `json:"lineItems,omitempty"`
	Shipments         []Shipment                `json:"shipments,omitempty"`
	FileBuilds        []domain.FileBuild        `json:"fileBuilds,omitempty"`
	SAMActionLogs     []domain.SAMActionLog     `json:"samActionLogs,omitempty"`
	MerchantNotes     []domain.MerchantNote     `json:"merchantNotes,omitempty"`
	AuditEvents       []domain.AuditEvent       `json:"auditEvents,omitempty"`

	// Deletes lists, by key, the ids of stored records that an import --upsert removes.
	Deletes map[string][]domain.ID `json:"deletes,omitempty"`
}

// Shipment is a shipment with the line item it belongs to, which the API object does not carry.
type Shipment struct {
	domain.Shipment
	LineItemID domain.ID `json:"lineItemId"`
}

// Write encodes the dataset as an indented JSON object.
func Write(w io.Writer, ds *Dataset) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetIndent("", "  ")
	if err := enc.Encode(ds); err != nil {
		return err
	}
	return bw.Flush()
}

// keys are the file's keys, in the order kinds lists them, then deletes.
func keys() []string {
	var out []string
	for _, k := range kinds() {
		out = append(out, k.key)
	}
	return append(out, deletesKey)
}

// Records counts the records of the file, its deletes included.
func (ds *Dataset) Records() int {
	n := 0
	for _, k := range kinds() {
		n += k.count(ds)
	}
	for _, ids := range ds.Deletes {
		n += len(ids)
	}
	return n
}
