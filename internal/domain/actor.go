package domain

import (
	"slices"
	"strings"
)

// Permission names one operation a user may perform; "*" grants all.
type Permission string

const (
	PermPushDeviceParameters    Permission = "device_parameters.push"
	PermReadSAMActionLogs       Permission = "sam_action_logs.read"
	PermReadServiceAcceptance   Permission = "service_acceptance.read"
	PermDecryptPrincipals       Permission = "principals.decrypt"
	PermDeleteMerchantDocuments Permission = "merchant_documents.delete"
	// PermReadAuditEvents reads the audit trail; only staff users (no partner) may use it.
	PermReadAuditEvents Permission = "audit_events.read"
	PermAll             Permission = "*"
)

// knownPermissions are the permissions a dataset may grant.
var knownPermissions = []Permission{
	PermPushDeviceParameters, PermReadSAMActionLogs, PermReadServiceAcceptance,
	PermDecryptPrincipals, PermDeleteMerchantDocuments, PermReadAuditEvents, PermAll,
}

// KnownPermissions lists every permission a dataset may grant, a fresh slice each call.
func KnownPermissions() []Permission { return slices.Clone(knownPermissions) }

// Known reports whether p is one of KnownPermissions: the one check of a permission's name, for
// import and the user commands alike.
func (p Permission) Known() bool { return slices.Contains(knownPermissions, p) }

// ParsePermissions reads the stored form: permissions separated by spaces.
func ParsePermissions(s string) []Permission {
	var out []Permission
	for _, f := range strings.Fields(s) {
		out = append(out, Permission(f))
	}
	return out
}

// FormatPermissions is the inverse of ParsePermissions.
func FormatPermissions(ps []Permission) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = string(p)
	}
	return strings.Join(parts, " ")
}

// Scope is the tenancy filter a store applies: a partner, or every partner for staff.
type Scope struct {
	PartnerID ID // empty for staff: sees all partners
}

// All reports whether the scope sees every partner.
func (s Scope) All() bool { return s.PartnerID == "" }

// Sees reports whether an object owned by partner is visible in the scope.
func (s Scope) Sees(partner ID) bool { return s.All() || s.PartnerID == partner }

// Actor is the authenticated user a request acts as, whichever credential carried it.
type Actor struct {
	UserID      ID
	PartnerID   ID // empty for staff
	Permissions []Permission
}

// Can reports whether the actor holds p.
func (a Actor) Can(p Permission) bool {
	return slices.Contains(a.Permissions, PermAll) || slices.Contains(a.Permissions, p)
}

// Scope returns the tenancy filter of the actor.
func (a Actor) Scope() Scope { return Scope{PartnerID: a.PartnerID} }

// SystemActorID is the actor of audit events written by command-line actions (issuing and
// revoking credentials, re-wrapping keys) when no --actor is given: the operator with shell access
// to the deployment, who is no user of the API. It is the nil uuid, so exported events still carry
// a valid uuid and re-import cleanly, and no generated user id can ever equal it.
const SystemActorID ID = nilID
