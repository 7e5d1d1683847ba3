// Package auth turns an Authorization header into the actor it speaks for. Two schemes are
// accepted (seed section 5): "Bearer <session token>" and "Api-Key <api key>". Secrets are looked
// up by their hash only; this package never logs a header or a secret.
package auth

import (
	"context"
	"errors"
	"strings"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/secrets"
)

// Credential is a parsed Authorization header: which kind of secret, and the secret.
type Credential struct {
	Kind   string // domain.CredentialSession or domain.CredentialAPIKey
	Secret string
}

// ErrMalformed covers every header that names no usable credential.
var ErrMalformed = errors.New("auth: malformed Authorization header")

// ParseHeader reads "<scheme> <credential>": the scheme is case-insensitive, one or more spaces
// separate the two, and the credential may not be empty or hold white space.
func ParseHeader(h string) (Credential, error) {
	scheme, rest, ok := strings.Cut(h, " ")
	if !ok {
		return Credential{}, ErrMalformed
	}
	secret := strings.TrimLeft(rest, " ")
	if secret == "" || strings.ContainsAny(secret, " \t\r\n") {
		return Credential{}, ErrMalformed
	}
	switch {
	case strings.EqualFold(scheme, "bearer"):
		return Credential{Kind: domain.CredentialSession, Secret: secret}, nil
	case strings.EqualFold(scheme, "api-key"):
		return Credential{Kind: domain.CredentialAPIKey, Secret: secret}, nil
	}
	return Credential{}, ErrMalformed
}

// Lookup reads stored credentials.
type Lookup interface {
	// Credential reads the credential of the kind whose secret hashes to hash, with its user, or
	// domain.ErrNotFound. Nothing may cache it: a revocation holds from the next request.
	Credential(ctx context.Context, kind string, hash []byte) (domain.Credential, error)
	// NoteAPIKeyUse records, best effort and without delaying the caller, that a key was used at
	// a time, unless a use within every before it is already recorded.
	NoteAPIKeyUse(id domain.ID, at time.Time, every time.Duration)
}

// Authenticator checks Authorization headers against the store.
type Authenticator struct {
	lookup Lookup
	now    func() time.Time
}

// New returns an Authenticator over lookup, judging expiry by now (time.Now when nil).
func New(lookup Lookup, now func() time.Time) *Authenticator {
	if now == nil {
		now = time.Now
	}
	return &Authenticator{lookup: lookup, now: now}
}

// lastUseGranularity is how stale an API key's recorded last use may get: a write per key per
// minute at most, instead of a write per request.
const lastUseGranularity = time.Minute

// Unauthenticated is the one answer for every failure: the caller learns nothing about which
// part was wrong.
var Unauthenticated = &domain.Error{Kind: domain.KindUnauthenticated, Code: "unauthenticated",
	Detail: "a valid Authorization header is required: Bearer <session token> or Api-Key <api key>"}

// Attempt is one Authorization header made ready for lookup: the credential's kind and the hash
// of its secret. The hash is also what a rate limiter may key on: it names the credential without
// holding the secret.
type Attempt struct {
	Kind string
	Hash []byte
	ok   bool
}

// NewAttempt parses and hashes header. A header that names no usable credential gives an attempt
// that Verify refuses (and Valid reports false).
func NewAttempt(header string) Attempt {
	cred, err := ParseHeader(header)
	if err != nil {
		return Attempt{}
	}
	return Attempt{Kind: cred.Kind, Hash: secrets.HashCredential(cred.Kind, cred.Secret), ok: true}
}

// Valid reports whether the header named a credential at all.
func (at Attempt) Valid() bool { return at.ok }

// Authenticate returns the actor for header, or Unauthenticated.
func (a *Authenticator) Authenticate(ctx context.Context, header string) (domain.Actor, error) {
	return a.Verify(ctx, NewAttempt(header))
}

// Verify returns the actor behind the attempt's credential, or Unauthenticated.
func (a *Authenticator) Verify(ctx context.Context, at Attempt) (domain.Actor, error) {
	if !at.ok {
		return domain.Actor{}, Unauthenticated
	}
	c, err := a.lookup.Credential(ctx, at.Kind, at.Hash)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.Actor{}, Unauthenticated
	}
	if err != nil {
		return domain.Actor{}, err
	}
	now := a.now()
	if !usable(c, at.Hash, now) {
		return domain.Actor{}, Unauthenticated
	}
	if at.Kind == domain.CredentialAPIKey && (c.LastUsedAt == nil || !c.LastUsedAt.After(now.Add(-lastUseGranularity))) {
		a.lookup.NoteAPIKeyUse(c.ID, now, lastUseGranularity)
	}
	return c.Actor, nil
}

// usable is the credential rule: the stored hash equals the presented one, compared in constant
// time (the index found the row; comparing again keeps the decision itself free of timing
// differences), the credential is not revoked, it has not expired (it expires at its instant),
// and its user is not disabled.
func usable(c domain.Credential, hash []byte, now time.Time) bool {
	if !secrets.Equal(c.Hash, hash) || c.RevokedAt != nil || c.UserDisabled {
		return false
	}
	return c.ExpiresAt == nil || c.ExpiresAt.After(now)
}
