// Package auth turns an Authorization header into the actor it speaks for. Two schemes are
// accepted (seed section 5): "Bearer <session token>" and "Api-Key <api key>". Secrets are looked
// up by their hash only; this package never logs a header or a secret.
package auth

import (
	"context"
	"errors"
	"strings"

	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
)

// Credential is a parsed Authorization header: which kind of secret, and the secret.
type Credential struct {
	Kind   string // store.KindSession or store.KindAPIKey
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
	switch strings.ToLower(scheme) {
	case "bearer":
		return Credential{Kind: store.KindSession, Secret: secret}, nil
	case "api-key":
		return Credential{Kind: store.KindAPIKey, Secret: secret}, nil
	}
	return Credential{}, ErrMalformed
}

// Lookup finds the actor behind a credential hash.
type Lookup interface {
	ActorByCredential(ctx context.Context, kind string, hash []byte) (domain.Actor, error)
}

// Authenticator checks Authorization headers against the store.
type Authenticator struct {
	lookup Lookup
}

// New returns an Authenticator over lookup.
func New(lookup Lookup) *Authenticator { return &Authenticator{lookup: lookup} }

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
	actor, err := a.lookup.ActorByCredential(ctx, at.Kind, at.Hash)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.Actor{}, Unauthenticated
	}
	if err != nil {
		return domain.Actor{}, err
	}
	return actor, nil
}
