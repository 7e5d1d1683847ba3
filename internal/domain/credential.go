package domain

import "time"

// Credential kinds: how a secret is presented (Api-Key or Bearer), and the label its hash is made
// under, so that a secret of one kind never matches a credential of the other.
const (
	CredentialAPIKey  = "api key"
	CredentialSession = "session"
)

// Credential is a stored credential and the user it acts as: what authentication decides on.
// Whether it may be used now (hash, revocation, expiry) is the auth package's rule.
type Credential struct {
	ID         ID
	Actor      Actor
	Hash       []byte
	ExpiresAt  *time.Time // nil: never expires
	RevokedAt  *time.Time
	LastUsedAt *time.Time // API keys only
	// UserDisabled: the credential's user is disabled, and so is every credential of theirs.
	UserDisabled bool
}

// SealedSSN is a principal's SSN as stored: the id of the key it is sealed under and the sealed
// bytes. Found is false when the principal has no SSN on file.
type SealedSSN struct {
	KeyID  string
	Sealed []byte
	Found  bool
}

// UserKey says which of a user's identifiers an access token names the user by.
type UserKey int

const (
	// UserKeyID: the token's user claim is the user's id.
	UserKeyID UserKey = iota
	// UserKeyExternalID: the token's user claim is the user's externalId.
	UserKeyExternalID
)

// UserRef names a user the way an access token does: one of the user's identifiers and its value.
type UserRef struct {
	Key   UserKey
	Value string
}

// Account is a user as authentication sees it: whom a credential of the user acts as, and whether
// the user may act at all. Whether it may is auth's rule.
type Account struct {
	Actor    Actor
	Disabled bool
}
