package domain

import (
	"encoding/json"
	"time"
)

// The records below are the back office's data as the dataset file and the API name it
// (camelCase). Times are UTC; a nil pointer is a JSON null.

type Partner struct {
	ID   ID     `json:"id"`
	Name string `json:"name"`
}

// User is a person or a service that acts on the API. ExternalID, when set, is the id the
// organisation's identity provider knows the user by (an access token may name the user by it);
// a disabled user's credentials are all refused. Both are left out of an export when unset.
type User struct {
	ID          ID           `json:"id"`
	PartnerID   *ID          `json:"partnerId"`
	Email       string       `json:"email"`
	Permissions []Permission `json:"permissions"`
	ExternalID  *string      `json:"externalId,omitempty"`
	Disabled    bool         `json:"disabled,omitempty"`
}

// APIKey and Session carry their plaintext secret only on the way in (import); the store keeps a
// hash and never gives the secret back.
type APIKey struct {
	ID        ID         `json:"id"`
	UserID    ID         `json:"userId"`
	Key       string     `json:"key"`
	ExpiresAt *time.Time `json:"expiresAt"`
}

type Session struct {
	ID        ID        `json:"id"`
	UserID    ID        `json:"userId"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
}

type CardPlan struct {
	ID          ID     `json:"id"`
	Code        string `json:"code"`
	DisplayName string `json:"displayName"`
	SortOrder   int64  `json:"sortOrder"`
}

type Lead struct {
	ID                ID                `json:"id"`
	PartnerID         ID                `json:"partnerId"`
	BusinessName      string            `json:"businessName"`
	MidID             *ID               `json:"midId"`
	ServiceAcceptance *StoredAcceptance `json:"serviceAcceptance"`
}

// StoredAcceptance is a lead's service acceptance as stored: the selected plans by id.
type StoredAcceptance struct {
	Configured          bool    `json:"configured"`
	SelectedCardPlanIDs []ID    `json:"selectedCardPlanIds"`
	EBTFcsNumber        *string `json:"ebtFcsNumber"`
	AmexProgram         *string `json:"amexProgram"`
	AmexEsaNumber       *string `json:"amexEsaNumber"`
	EBTBenefitMode      *string `json:"ebtBenefitMode"`
}

// Principal is an owner of a lead's business. SSN is plaintext and only present on import and on
// an export with secrets; at rest it is sealed.
type Principal struct {
	ID        ID      `json:"id"`
	LeadID    ID      `json:"leadId"`
	FirstName string  `json:"firstName"`
	LastName  string  `json:"lastName"`
	SSN       *string `json:"ssn,omitempty"`
}

type Merchant struct {
	ID        ID     `json:"id"`
	PartnerID ID     `json:"partnerId"`
	LeadID    *ID    `json:"leadId"`
	Name      string `json:"name"`
}

type MerchantDocument struct {
	ID            ID     `json:"id"`
	MerchantID    ID     `json:"merchantId"`
	FileName      string `json:"fileName"`
	ContentType   string `json:"contentType"`
	ContentBase64 []byte `json:"contentBase64"`
}

type PricingModel struct {
	ID                ID      `json:"id"`
	MerchantID        ID      `json:"merchantId"`
	Active            bool    `json:"active"`
	Type              string  `json:"type"`
	AdjustmentPercent *string `json:"adjustmentPercent"`
}

type DeploymentModel struct {
	ID            ID     `json:"id"`
	Name          string `json:"name"`
	EquipmentType string `json:"equipmentType"`
	Workflow      string `json:"workflow"`
}

// WorkflowGateway is the deployment-model workflow that operation 4.1 serves.
const WorkflowGateway = "gateway"

type DeploymentOrder struct {
	ID         ID `json:"id"`
	MerchantID ID `json:"merchantId"`
}

// Audit stamps shared by the deployment records (inventory units, equipment, VAR sheets, line
// items).
type Stamps struct {
	CreatedAt time.Time `json:"createdAt"`
	CreatedBy ID        `json:"createdBy"`
	UpdatedAt time.Time `json:"updatedAt"`
	UpdatedBy ID        `json:"updatedBy"`
}

type InventoryUnit struct {
	ID                ID        `json:"id"`
	DeploymentModelID ID        `json:"deploymentModelId"`
	SerialNumber      string    `json:"serialNumber"`
	Condition         string    `json:"condition"`
	Status            string    `json:"status"`
	ReceivedDate      time.Time `json:"receivedDate"`
	Stamps
}

type Equipment struct {
	ID                ID         `json:"id"`
	EntityID          ID         `json:"entityId"`
	EntityType        string     `json:"entityType"`
	DeploymentModelID ID         `json:"deploymentModelId"`
	InventoryUnitID   *ID        `json:"inventoryUnitId"`
	VendorTerminalID  *string    `json:"vendorTerminalId"`
	VarsheetID        *ID        `json:"varsheetId"`
	Status            string     `json:"status"`
	DeployedDate      *time.Time `json:"deployedDate"`
	Stamps
}

type Varsheet struct {
	ID                      ID      `json:"id"`
	EntityID                ID      `json:"entityId"`
	EntityType              string  `json:"entityType"`
	MidID                   ID      `json:"midId"`
	VNumber                 string  `json:"vNumber"`
	TerminalIDNumber        *string `json:"terminalIdNumber"`
	Agent                   *string `json:"agent"`
	Chain                   *string `json:"chain"`
	StoreNumber             *string `json:"storeNumber"`
	MerchantNumber          *string `json:"merchantNumber"`
	CurrencyCode            *string `json:"currencyCode"`
	TimeZoneCode            *string `json:"timeZoneCode"`
	TimeZoneDifferential    *string `json:"timeZoneDifferential"`
	DiscoverNumber          *string `json:"discoverNumber"`
	AmexOptBlue             *bool   `json:"amexOptBlue"`
	PinDebit                *bool   `json:"pinDebit"`
	EBTFoodStamps           *bool   `json:"ebtFoodStamps"`
	EBTCash                 *bool   `json:"ebtCash"`
	MerchantLocationNumber  *string `json:"merchantLocationNumber"`
	MerchantABANumber       *string `json:"merchantABANumber"`
	MerchantSettlementAgent *string `json:"merchantSettlementAgent"`
	ReimbursementAttribute  *string `json:"reimbursementAttribute"`
	SharingGroup            *string `json:"sharingGroup"`
	Industry                *string `json:"industry"`
	FcsNumber               *string `json:"fcsNumber"`
	Stamps
}

type LineItem struct {
	ID                ID       `json:"id"`
	OrderID           ID       `json:"orderId"`
	OrderType         string   `json:"orderType"`
	DeploymentModelID ID       `json:"deploymentModelId"`
	ConnectionType    []string `json:"connectionType"`
	Status            string   `json:"status"`
	InventoryUnitID   *ID      `json:"inventoryUnitId"`
	EquipmentID       *ID      `json:"equipmentId"`
	VarsheetID        *ID      `json:"varsheetId"`
	Stamps
}

// Shipment is a line item's shipment; the line item it belongs to is the dataset's business (it is not a field
// of the API object).
type Shipment struct {
	ID             ID         `json:"id"`
	Status         string     `json:"status"`
	CarrierCode    *string    `json:"carrierCode"`
	TrackingNumber *string    `json:"trackingNumber"`
	ShippedDate    *time.Time `json:"shippedDate"`
}

type FileBuild struct {
	ID         ID              `json:"id"`
	LineItemID ID              `json:"lineItemId"`
	Settings   json.RawMessage `json:"settings"`
}

type SAMActionLog struct {
	ID         ID        `json:"id"`
	EntityID   ID        `json:"entityId"`
	Action     string    `json:"action"`
	ActionDate time.Time `json:"actionDate"`
	SamID      int64     `json:"samId"`
}

type MerchantNote struct {
	ID         ID        `json:"id"`
	MerchantID ID        `json:"merchantId"`
	Body       string    `json:"body"`
	CreatedAt  time.Time `json:"createdAt"`
	CreatedBy  ID        `json:"createdBy"`
}

// Audit outcomes.
const (
	OutcomeGranted  = "granted"
	OutcomeDenied   = "denied"
	OutcomeNotFound = "not_found"
	OutcomeInvalid  = "invalid"
)

type AuditEvent struct {
	ID          ID        `json:"id"`
	At          time.Time `json:"at"`
	ActorUserID ID        `json:"actorUserId"`
	Action      string    `json:"action"`
	TargetID    string    `json:"targetId"`
	Outcome     string    `json:"outcome"`
	Detail      string    `json:"detail"`
	// The chain (see docs/compliance.md), set by the store when the event is written: the event's
	// sequence number, the id of the master key its link was made under, and the link in hex.
	// Events written before the chain existed have a sequence number and no link.
	Seq        int64  `json:"seq,omitempty"`
	ChainKeyID string `json:"chainKeyId,omitempty"`
	Hash       string `json:"hash,omitempty"`
}

// EquipmentView is equipment as the API shows it, with the fields derived from its deployment
// model and inventory unit.
type EquipmentView struct {
	Equipment
	ModelName     *string `json:"modelName"`
	EquipmentType *string `json:"equipmentType"`
	SerialNumber  *string `json:"serialNumber"`
}

// LineItemView is a line item with its related objects embedded (null where absent).
type LineItemView struct {
	LineItem
	InventoryUnit *InventoryUnit `json:"inventoryUnit"`
	Equipment     *EquipmentView `json:"equipment"`
	Varsheet      *Varsheet      `json:"varsheet"`
	Shipment      *Shipment      `json:"shipment"`
}

// ServiceAcceptance is a lead's service acceptance as the API shows it.
type ServiceAcceptance struct {
	MidID          *ID                 `json:"midId"`
	Configured     bool                `json:"configured"`
	CardPlans      []CardPlanSelection `json:"cardPlans"`
	EBTFcsNumber   *string             `json:"ebtFcsNumber"`
	AmexProgram    *string             `json:"amexProgram"`
	AmexEsaNumber  *string             `json:"amexEsaNumber"`
	EBTBenefitMode *string             `json:"ebtBenefitMode"`
}

// CardPlanSelection is one catalogue card plan and whether the lead selected it.
type CardPlanSelection struct {
	CardPlan
	Selected bool `json:"selected"`
}

// AuditFilter narrows a listing of audit events; zero fields match everything. From is
// inclusive, To exclusive.
type AuditFilter struct {
	ActorUserID ID
	TargetID    string
	Action      string
	Outcome     string
	From, To    *time.Time
}
