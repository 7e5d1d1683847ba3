package client

import (
	"fmt"
	"log/slog"
	"time"
)

// The records of the service's answers, as the OpenAPI document (internal/api/openapi.yaml)
// describes them. Ids are lower-case uuids; date-times are UTC. A pointer is null where absent.

// SAMActionLog is one SAM action log entry.
type SAMActionLog struct {
	ID         string    `json:"id"`
	EntityID   string    `json:"entityId"`
	Action     string    `json:"action"`
	ActionDate time.Time `json:"actionDate"`
	SamID      int64     `json:"samId"`
}

// PageMeta describes one page of a list (docs/api.md, "Pagination"): every record has been
// seen once Page equals TotalPages.
type PageMeta struct {
	Page       int64 `json:"page"`
	PerPage    int64 `json:"perPage"`
	TotalCount int64 `json:"totalCount"`
	TotalPages int64 `json:"totalPages"`
}

// SAMActionLogPage is one page of SAM action logs.
type SAMActionLogPage struct {
	Meta PageMeta       `json:"meta"`
	Data []SAMActionLog `json:"data"`
}

// AuditEvent is one event of the audit trail. Seq numbers events in commit order from 1;
// ChainKeyID and Hash are its link in the audit chain, empty for events from before the chain.
type AuditEvent struct {
	ID          string    `json:"id"`
	At          time.Time `json:"at"`
	ActorUserID string    `json:"actorUserId"`
	Action      string    `json:"action"`
	TargetID    string    `json:"targetId"`
	Outcome     string    `json:"outcome"`
	Detail      string    `json:"detail"`
	Seq         int64     `json:"seq"`
	ChainKeyID  string    `json:"chainKeyId,omitempty"`
	Hash        string    `json:"hash,omitempty"`
}

// AuditEventProof is an audit event beside its proof: Proof is the text of c2sp.org/tlog-proof@v1
// (its extra line the event's subject tag, its index, the inclusion hashes, the signed
// checkpoint).
type AuditEventProof struct {
	Event AuditEvent `json:"event"`
	Proof string     `json:"proof"`
}

// AuditEventPage is one page of the audit trail.
type AuditEventPage struct {
	Meta PageMeta     `json:"meta"`
	Data []AuditEvent `json:"data"`
}

// ServiceAcceptance is a lead's service acceptance.
type ServiceAcceptance struct {
	MidID          *string    `json:"midId"`
	Configured     bool       `json:"configured"`
	CardPlans      []CardPlan `json:"cardPlans"`
	EBTFcsNumber   *string    `json:"ebtFcsNumber"`
	AmexProgram    *string    `json:"amexProgram"`
	AmexEsaNumber  *string    `json:"amexEsaNumber"`
	EBTBenefitMode *string    `json:"ebtBenefitMode"`
}

// CardPlan is a card plan of the catalogue; Selected when the lead accepts it.
type CardPlan struct {
	ID          string `json:"id"`
	Code        string `json:"code"`
	DisplayName string `json:"displayName"`
	SortOrder   int64  `json:"sortOrder"`
	Selected    bool   `json:"selected"`
}

// SSN is a decrypted social security number. It prints as [REDACTED] (fmt, slog) so that it
// does not end up in a log by accident; Reveal returns it.
type SSN string

// Reveal returns the SSN itself.
func (s SSN) Reveal() string { return string(s) }

func (SSN) String() string                 { return "[REDACTED]" }
func (s SSN) GoString() string             { return s.String() }
func (s SSN) Format(f fmt.State, _ rune)   { _, _ = f.Write([]byte(s.String())) }
func (s SSN) LogValue() slog.Value         { return slog.StringValue(s.String()) }
func (s SSN) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// LineItem is a deployment order line item with its embedded records.
type LineItem struct {
	ID                string         `json:"id"`
	OrderID           string         `json:"orderId"`
	OrderType         string         `json:"orderType"`
	DeploymentModelID string         `json:"deploymentModelId"`
	ConnectionType    []string       `json:"connectionType"`
	Status            string         `json:"status"`
	InventoryUnitID   *string        `json:"inventoryUnitId"`
	EquipmentID       *string        `json:"equipmentId"`
	VarsheetID        *string        `json:"varsheetId"`
	CreatedAt         time.Time      `json:"createdAt"`
	CreatedBy         string         `json:"createdBy"`
	UpdatedAt         time.Time      `json:"updatedAt"`
	UpdatedBy         string         `json:"updatedBy"`
	InventoryUnit     *InventoryUnit `json:"inventoryUnit"`
	Equipment         *Equipment     `json:"equipment"`
	Varsheet          *Varsheet      `json:"varsheet"`
	Shipment          *Shipment      `json:"shipment"`
}

// InventoryUnit is a deployment inventory unit.
type InventoryUnit struct {
	ID                string    `json:"id"`
	DeploymentModelID string    `json:"deploymentModelId"`
	SerialNumber      string    `json:"serialNumber"`
	Condition         string    `json:"condition"`
	Status            string    `json:"status"`
	ReceivedDate      time.Time `json:"receivedDate"`
	CreatedAt         time.Time `json:"createdAt"`
	UpdatedAt         time.Time `json:"updatedAt"`
	CreatedBy         string    `json:"createdBy"`
	UpdatedBy         string    `json:"updatedBy"`
}

// Equipment is a deployed device; VendorTerminalID is the gateway's terminal id.
type Equipment struct {
	ID                string     `json:"id"`
	EntityID          string     `json:"entityId"`
	EntityType        string     `json:"entityType"`
	DeploymentModelID string     `json:"deploymentModelId"`
	InventoryUnitID   *string    `json:"inventoryUnitId"`
	VendorTerminalID  *string    `json:"vendorTerminalId"`
	VarsheetID        *string    `json:"varsheetId"`
	Status            string     `json:"status"`
	DeployedDate      *time.Time `json:"deployedDate"`
	CreatedAt         time.Time  `json:"createdAt"`
	UpdatedAt         time.Time  `json:"updatedAt"`
	CreatedBy         string     `json:"createdBy"`
	UpdatedBy         string     `json:"updatedBy"`
	ModelName         *string    `json:"modelName"`
	EquipmentType     *string    `json:"equipmentType"`
	SerialNumber      *string    `json:"serialNumber"`
}

// Varsheet is a VAR sheet.
type Varsheet struct {
	ID                      string    `json:"id"`
	EntityID                string    `json:"entityId"`
	EntityType              string    `json:"entityType"`
	MidID                   string    `json:"midId"`
	VNumber                 string    `json:"vNumber"`
	TerminalIDNumber        *string   `json:"terminalIdNumber"`
	Agent                   *string   `json:"agent"`
	Chain                   *string   `json:"chain"`
	StoreNumber             *string   `json:"storeNumber"`
	MerchantNumber          *string   `json:"merchantNumber"`
	CurrencyCode            *string   `json:"currencyCode"`
	TimeZoneCode            *string   `json:"timeZoneCode"`
	TimeZoneDifferential    *string   `json:"timeZoneDifferential"`
	DiscoverNumber          *string   `json:"discoverNumber"`
	AmexOptBlue             *bool     `json:"amexOptBlue"`
	PinDebit                *bool     `json:"pinDebit"`
	EBTFoodStamps           *bool     `json:"ebtFoodStamps"`
	EBTCash                 *bool     `json:"ebtCash"`
	MerchantLocationNumber  *string   `json:"merchantLocationNumber"`
	MerchantABANumber       *string   `json:"merchantABANumber"`
	MerchantSettlementAgent *string   `json:"merchantSettlementAgent"`
	ReimbursementAttribute  *string   `json:"reimbursementAttribute"`
	SharingGroup            *string   `json:"sharingGroup"`
	Industry                *string   `json:"industry"`
	FcsNumber               *string   `json:"fcsNumber"`
	CreatedAt               time.Time `json:"createdAt"`
	UpdatedAt               time.Time `json:"updatedAt"`
	CreatedBy               string    `json:"createdBy"`
	UpdatedBy               string    `json:"updatedBy"`
}

// Shipment is a line item's shipment.
type Shipment struct {
	ID             string     `json:"id"`
	Status         string     `json:"status"`
	CarrierCode    *string    `json:"carrierCode"`
	TrackingNumber *string    `json:"trackingNumber"`
	ShippedDate    *time.Time `json:"shippedDate"`
}
