// Package auth turns an Authorization header into the actor it speaks for. Two schemes are
// accepted (docs/api.md, "Authentication"): "Bearer <session token>" and "Api-Key <api key>", and, when an
// identity provider is configured, "Bearer <access token>" (a JWT, checked by Tokens). Secrets
// are looked up by their hash only; this package never logs a header or a secret.
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

// Tokens checks access tokens issued by the organisation's identity provider (internal/oauth).
type Tokens interface {
	// Verify checks token and names the user it acts for, or refuses it with a *TokenError (any
	// other error is not the token's fault: the request's context ending, say).
	Verify(ctx context.Context, token string) (domain.UserRef, error)
}

// Accounts reads the user an access token names.
type Accounts interface {
	// Account reads the user ref names, or domain.ErrNotFound. Nothing may cache it beyond what
	// Lookup.Credential may: a user disabled or removed is refused from the next request.
	Account(ctx context.Context, ref domain.UserRef) (domain.Account, error)
}

// Authenticator checks Authorization headers against the store.
type Authenticator struct {
	lookup   Lookup
	now      func() time.Time
	tokens   Tokens
	accounts Accounts
}

// Option configures an Authenticator.
type Option func(*Authenticator)

// WithTokens accepts access tokens as Bearer credentials: a Bearer credential shaped as a JWT
// (LooksLikeJWT) is checked by tokens and acts as the user accounts reads, any other one is a
// session token. Without it every Bearer credential is a session token.
func WithTokens(tokens Tokens, accounts Accounts) Option {
	return func(a *Authenticator) { a.tokens, a.accounts = tokens, accounts }
}

// New returns an Authenticator over lookup, judging expiry by now (time.Now when nil).
func New(lookup Lookup, now func() time.Time, opts ...Option) *Authenticator {
	if now == nil {
		now = time.Now
	}
	a := &Authenticator{lookup: lookup, now: now}
	for _, o := range opts {
		o(a)
	}
	return a
}

// lastUseGranularity is how stale an API key's recorded last use may get: a write per key per
// minute at most, instead of a write per request.
const lastUseGranularity = time.Minute

// unauthenticated is the one answer for every failure: the caller learns nothing about which
// part was wrong. Failed tells it (and a refused token) from any other error.
var unauthenticated = &domain.Error{Kind: domain.KindUnauthenticated, Code: "unauthenticated",
	Detail: "a valid Authorization header is required: Bearer <session token> or Api-Key <api key>"}

// Attempt is one Authorization header made ready for lookup: the credential's kind and the hash
// of its secret. The hash is also what a rate limiter may key on: it names the credential without
// holding the secret.
type Attempt struct {
	Kind string
	Hash []byte
	ok   bool
	// jwt is a Bearer credential shaped as a JWT: an access token, when tokens are accepted.
	jwt string
}

// NewAttempt parses and hashes header. A header that names no usable credential gives an attempt
// that Verify refuses (and Valid reports false).
func NewAttempt(header string) Attempt {
	cred, err := ParseHeader(header)
	if err != nil {
		return Attempt{}
	}
	at := Attempt{Kind: cred.Kind, Hash: secrets.HashCredential(cred.Kind, cred.Secret), ok: true}
	if cred.Kind == domain.CredentialSession && LooksLikeJWT(cred.Secret) {
		at.jwt = cred.Secret
	}
	return at
}

// LooksLikeJWT tells an access token from a session token by its shape: a JWS in compact form is
// a header and a payload in base64url, then a signature in base64url (empty for "alg": "none",
// which the check refuses), joined by two dots. No session token this service issues has a dot
// (bos_ and lower-case base32). Nothing is decoded here.
func LooksLikeJWT(s string) bool {
	header, rest, ok := strings.Cut(s, ".")
	payload, signature, ok2 := strings.Cut(rest, ".")
	return ok && ok2 && header != "" && payload != "" &&
		isBase64URL(header) && isBase64URL(payload) && isBase64URL(signature)
}

func isBase64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Valid reports whether the header named a credential at all.
func (at Attempt) Valid() bool { return at.ok }

// Verify returns the actor behind the attempt's credential, or a 401 unauthenticated that Failed
// reports (for an access token, one that carries the reason, a *TokenError).
func (a *Authenticator) Verify(ctx context.Context, at Attempt) (domain.Actor, error) {
	if !at.ok {
		return domain.Actor{}, unauthenticated
	}
	if at.jwt != "" && a.tokens != nil {
		return a.verifyToken(ctx, at.jwt)
	}
	c, err := a.lookup.Credential(ctx, at.Kind, at.Hash)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.Actor{}, unauthenticated
	}
	if err != nil {
		return domain.Actor{}, err
	}
	now := a.now()
	if !usable(c, at.Hash, now) {
		return domain.Actor{}, unauthenticated
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

// verifyToken is the access token rule: the token checks out (Tokens), and it names a user of
// the dataset who is not disabled. That user's permissions and partner apply, as for a session.
func (a *Authenticator) verifyToken(ctx context.Context, token string) (domain.Actor, error) {
	ref, err := a.tokens.Verify(ctx, token)
	if err != nil {
		return domain.Actor{}, refusal(err)
	}
	acc, err := a.accounts.Account(ctx, ref)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.Actor{}, refusal(&TokenError{Description: "the token's user is not a user of this service"})
	}
	if err != nil {
		return domain.Actor{}, err
	}
	if acc.Disabled {
		return domain.Actor{}, refusal(&TokenError{Description: "the token's user is disabled"})
	}
	return acc.Actor, nil
}

// TokenError is why an access token was refused. Description may be shown to the caller (RFC
// 6750's error_description): it never holds the token, a claim's value or a secret. Err, the
// cause, goes to the log.
type TokenError struct {
	Description string
	Err         error
	// Unchecked marks a token that could not be checked at all (the identity provider's keys are
	// not available): refused, but no failure of the caller's, so not counted against its address.
	Unchecked bool
}

func (e *TokenError) Error() string {
	if e.Err != nil {
		return "access token refused: " + e.Description + ": " + e.Err.Error()
	}
	return "access token refused: " + e.Description
}

func (e *TokenError) Unwrap() error { return e.Err }

// Is makes a refused token count as a failed authentication (Failed); an unchecked one is not
// counted.
func (e *TokenError) Is(target error) bool { return target == unauthenticated && !e.Unchecked }

// Failed reports whether err is a failed authentication, the caller's to answer for: Verify's
// refusal of a credential, or of an access token it checked. A token it could not check (the
// provider's keys not available) is refused too, but is not the caller's failure.
func Failed(err error) bool { return errors.Is(err, unauthenticated) }

// refusal answers a refused token with 401 unauthenticated, its reason in the detail; any other
// error passes as it is.
func refusal(err error) error {
	var te *TokenError
	if !errors.As(err, &te) {
		return err
	}
	return &domain.Error{Kind: domain.KindUnauthenticated, Code: unauthenticated.Code,
		Detail: "the access token is not accepted: " + te.Description, Err: te}
}
