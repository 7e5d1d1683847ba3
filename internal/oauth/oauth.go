// Package oauth checks the access tokens of the organisation's identity provider: JWTs as RFC
// 9068 profiles them, signed with a key the provider publishes in its JWKS, which its discovery
// document (OpenID Connect Discovery, or RFC 8414) names. It answers which user a token acts for;
// internal/auth decides what that user may do. It never logs a token.
//
// The JOSE work (parsing, algorithm allow-list, signature, the registered claims) is
// github.com/go-jose/go-jose/v4's; this package adds what it leaves to its callers: where the keys
// come from and for how long they are trusted, the RFC 9068 header and claim rules, and which
// user a token names.
package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"backoffice/internal/auth"
	"backoffice/internal/domain"
	"backoffice/internal/pause"
)

// Leeway is how far the service's clock and the provider's may disagree: a token is accepted up
// to this long after its exp, and this long before its nbf or iat.
const Leeway = 30 * time.Second

// DefaultKeysMaxAge is how long a fetched key set is trusted unless Config.KeysMaxAge says
// otherwise: a key the provider removes stops being accepted within it.
const DefaultKeysMaxAge = 2 * time.Minute

// DefaultMaxLifetime is the longest lifetime a token may have unless Config.MaxLifetime says
// otherwise: a token stays valid until its exp whatever happens at the provider, so a leaked one
// must not stay valid for long.
const DefaultMaxLifetime = 24 * time.Hour

// algorithms are the signature algorithms a token may use. None is symmetric: a shared secret
// would let whoever checks tokens also make them; "none" signs nothing.
var algorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// Config says which provider's tokens are accepted and how a token names its user.
type Config struct {
	// Issuer is the provider's issuer identifier, exactly as its tokens' iss claim and its
	// discovery document spell it (an https URL).
	Issuer string
	// Audience is this service's identifier at the provider: a token's aud claim must hold it.
	Audience string
	// UserClaim names the claim that names the user ("" means sub).
	UserClaim string
	// UserKey says what the claim's value is: the user's id (the default) or external id.
	UserKey domain.UserKey
	// AllowJWTType also accepts tokens whose typ header is JWT, or absent, besides at+jwt. Such a
	// token is still refused when it carries a claim only an ID token carries (idTokenClaim),
	// unless AllowIDTokenClaims.
	AllowJWTType bool
	// AllowIDTokenClaims accepts tokens whose typ is not at+jwt even when they carry an ID token's
	// claims: for providers whose access tokens are shaped as their ID tokens.
	AllowIDTokenClaims bool
	// MaxLifetime is the longest a token may be valid, from its iat to its exp, or from now when
	// it has no iat (0: DefaultMaxLifetime).
	MaxLifetime time.Duration
	// KeysMaxAge is how long a fetched key set is trusted (0: DefaultKeysMaxAge).
	KeysMaxAge time.Duration
	// HTTPClient fetches the discovery document and the keys; nil uses the system's certificate
	// store (SSL_CERT_FILE and SSL_CERT_DIR apply) and the environment's proxy.
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives what the key fetches find; nil discards it.
	Logger *slog.Logger
}

// Verifier checks access tokens. It is safe for concurrent use.
type Verifier struct {
	issuer, audience string
	userClaim        string
	userKey          domain.UserKey
	allowJWTType     bool
	allowIDClaims    bool
	maxLifetime      time.Duration
	now              func() time.Time
	keys             *keyCache
	verified         *verifiedCache
}

// ErrUnreachable marks a failure to reach the provider (a network error, a timeout, a 5xx): a
// fetch may succeed later. Any other failure of a fetch is the provider's answer, and says the
// configuration (or the provider's) is wrong.
var ErrUnreachable = errors.New("the identity provider could not be reached")

// New checks cfg and fetches the provider's discovery document and keys once. It fails when the
// configuration is unusable or the provider answers that it is wrong (no discovery document at
// the issuer, another issuer named in it, no usable jwks_uri). When the provider cannot be reached
// it returns the verifier all the same, with an error that wraps ErrUnreachable: tokens are
// refused until a later fetch (Run, or a token's arrival) succeeds.
func New(ctx context.Context, cfg Config) (*Verifier, error) {
	if err := checkIssuer(cfg.Issuer); err != nil {
		return nil, err
	}
	if strings.TrimSpace(cfg.Audience) == "" {
		return nil, errors.New("oauth: the audience is empty: set this service's identifier at the identity provider")
	}
	if cfg.UserClaim == "" {
		cfg.UserClaim = "sub"
	}
	if cfg.MaxLifetime <= 0 {
		cfg.MaxLifetime = DefaultMaxLifetime
	}
	if cfg.KeysMaxAge <= 0 {
		cfg.KeysMaxAge = DefaultKeysMaxAge
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	v := &Verifier{
		issuer: cfg.Issuer, audience: cfg.Audience, userClaim: cfg.UserClaim, userKey: cfg.UserKey,
		allowJWTType: cfg.AllowJWTType, allowIDClaims: cfg.AllowIDTokenClaims, maxLifetime: cfg.MaxLifetime, now: cfg.Now,
		keys:     newKeyCache(cfg.Issuer, fetchClient(cfg.HTTPClient), cfg.KeysMaxAge, cfg.Now, cfg.Logger),
		verified: newVerifiedCache(),
	}
	if err := v.keys.refresh(ctx); err != nil {
		return nil, err
	}
	if err := v.keys.lastError(); err != nil {
		if errors.Is(err, ErrUnreachable) {
			return v, err
		}
		return nil, err
	}
	return v, nil
}

// checkIssuer refuses an issuer that is not an absolute https URL without query or fragment
// (RFC 8414 section 2; OpenID Connect Discovery section 2).
func checkIssuer(issuer string) error {
	u, err := url.Parse(issuer)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("oauth: issuer %q is not an https URL without query or fragment (the provider's issuer identifier, as its tokens' iss claim spells it)", issuer)
	}
	return nil
}

// Run keeps the keys fresh until ctx ends, so that requests find them without waiting: it
// fetches them again once half their trusted time has passed, and while the provider cannot be
// reached, as often as fetches may be made.
func (v *Verifier) Run(ctx context.Context) {
	for pause.For(ctx, v.keys.untilDue(v.now())) == nil {
		_ = v.keys.refresh(ctx)
	}
}

// refuse is a refusal with a reason the caller may be shown; cause goes to the log.
func refuse(description string, cause error) *auth.TokenError {
	return &auth.TokenError{Description: description, Err: cause}
}

// Verify checks token (RFC 9068 section 4) and returns the user it names. A refusal is a
// *auth.TokenError; an error of ctx is returned as it is.
func (v *Verifier) Verify(ctx context.Context, token string) (domain.UserRef, error) {
	now := v.now()
	sum := sha256.Sum256([]byte(token))
	if ref, ok := v.verified.get(sum, now, v.keys); ok {
		return ref, nil
	}
	jws, err := jose.ParseSignedCompact(token, algorithms)
	if err != nil {
		return domain.UserRef{}, refuse("the token is not a JWT signed with an accepted algorithm (RS256, ES256, PS256, EdDSA and their longer forms)", err)
	}
	h := jws.Signatures[0].Header
	if _, ok := h.ExtraHeaders["crit"]; ok {
		// RFC 7515 section 4.1.11: an extension the recipient must understand, and no profile of
		// access tokens defines one.
		return domain.UserRef{}, refuse(unsupportedCritical, nil)
	}
	accessTyped, accepted := v.acceptedType(h.ExtraHeaders[jose.HeaderType])
	if !accepted {
		return domain.UserRef{}, refuse("the token is not an access token (its typ header is not at+jwt)", nil)
	}
	if h.KeyID == "" {
		return domain.UserRef{}, refuse("the token names no signing key (kid header)", nil)
	}
	key, err := v.keys.key(ctx, h.KeyID, h.Algorithm)
	if err != nil {
		return domain.UserRef{}, err
	}
	payload, err := jws.Verify(key.jwk.Key)
	if err != nil {
		return domain.UserRef{}, refuse("the token's signature does not verify", err)
	}
	var claims jwt.Claims
	if err := json.Unmarshal(payload, &claims); err != nil {
		return domain.UserRef{}, refuse("the token's claims are not a JSON object of the registered types (RFC 7519)", err)
	}
	if !accessTyped && !v.allowIDClaims {
		if name := idTokenClaim(payload); name != "" {
			return domain.UserRef{}, refuse("the token is shaped as an ID token, not an access token (it is not typed at+jwt and carries "+name+")", nil)
		}
	}
	if err := v.checkClaims(claims, now); err != nil {
		return domain.UserRef{}, err
	}
	ref, err := v.user(claims, payload)
	if err != nil {
		return domain.UserRef{}, err
	}
	v.verified.put(sum, verifiedToken{ref: ref, kid: h.KeyID, thumbprint: key.thumbprint, expiry: claims.Expiry.Time()}, now)
	return ref, nil
}

// unsupportedCritical is the refusal of a token with a crit header.
const unsupportedCritical = "the token has an unsupported critical header (crit)"

// acceptedType is RFC 9068's typ rule: at+jwt, with or without the application/ prefix, in any
// letter case (RFC 7515 section 4.1.9). AllowJWTType also takes JWT and no typ at all. typed says
// the token is typed as an access token.
func (v *Verifier) acceptedType(header any) (typed, accepted bool) {
	typ, isString := header.(string)
	if header != nil && !isString {
		return false, false
	}
	typ = strings.ToLower(strings.TrimPrefix(strings.ToLower(typ), "application/"))
	switch {
	case typ == "at+jwt":
		return true, true
	case v.allowJWTType:
		return false, header == nil || typ == "jwt"
	}
	return false, false
}

// idTokenClaim names a claim of payload that marks it as an OpenID Connect ID token, or is "":
// nonce, at_hash and c_hash bind an ID token to the sign-in it ends (OpenID Connect Core 1.0
// sections 2 and 3.3.2.11) and have no use in an access token; Keycloak types its ID tokens with a
// typ claim of ID (its access tokens: Bearer).
func idTokenClaim(payload []byte) string {
	var c map[string]json.RawMessage
	if json.Unmarshal(payload, &c) != nil {
		return "" // read as a JSON object before
	}
	var typ string
	if json.Unmarshal(c["typ"], &typ) == nil {
		switch {
		case strings.EqualFold(typ, "ID"):
			return "a typ claim of ID"
		case strings.EqualFold(typ, "Bearer"):
			// Keycloak's access tokens say so, and may carry the sign-in's nonce.
			return ""
		}
	}
	for _, name := range []string{"nonce", "at_hash", "c_hash"} {
		if _, ok := c[name]; ok {
			return name
		}
	}
	return ""
}

// checkClaims holds the registered claims to the configuration and the clock.
func (v *Verifier) checkClaims(c jwt.Claims, now time.Time) error {
	if c.Expiry == nil {
		return refuse("the token has no expiry (exp claim)", nil)
	}
	err := c.ValidateWithLeeway(jwt.Expected{Issuer: v.issuer, AnyAudience: jwt.Audience{v.audience}, Time: now}, Leeway)
	switch {
	case err == nil:
		return v.checkLifetime(c, now)
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return refuse("the token's issuer is not the configured identity provider", fmt.Errorf("iss %q, configured %q: %w", c.Issuer, v.issuer, err))
	case errors.Is(err, jwt.ErrInvalidAudience):
		return refuse("the token's audience does not include this service", fmt.Errorf("aud %q, configured %q: %w", []string(c.Audience), v.audience, err))
	case errors.Is(err, jwt.ErrExpired):
		return refuse("the token has expired", err)
	case errors.Is(err, jwt.ErrNotValidYet):
		return refuse("the token is not valid yet (nbf claim)", err)
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return refuse("the token was issued in the future (iat claim)", err)
	}
	return refuse("the token's claims are not accepted", err)
}

// checkLifetime refuses a token valid for longer than the maximum: from its iat to its exp, or,
// without iat, from now to its exp.
func (v *Verifier) checkLifetime(c jwt.Claims, now time.Time) error {
	from, what := now, "exp - now, the token having no iat"
	if c.IssuedAt != nil {
		from, what = c.IssuedAt.Time(), "exp - iat"
	}
	if lifetime := c.Expiry.Time().Sub(from); lifetime > v.maxLifetime {
		return refuse("the token's lifetime is longer than this service accepts",
			fmt.Errorf("%s is %s, the maximum %s", what, lifetime, v.maxLifetime))
	}
	return nil
}

// user reads the user claim. Its value is never shown to the caller nor logged: it may be a
// person's name or address.
func (v *Verifier) user(c jwt.Claims, payload []byte) (domain.UserRef, error) {
	value := c.Subject
	if v.userClaim != "sub" {
		var all map[string]json.RawMessage
		value = ""
		if json.Unmarshal(payload, &all) == nil {
			if json.Unmarshal(all[v.userClaim], &value) != nil {
				value = ""
			}
		}
	}
	if value == "" {
		return domain.UserRef{}, refuse("the token has no "+v.userClaim+" claim (a non-empty string) to name its user", nil)
	}
	if v.userKey == domain.UserKeyExternalID {
		return domain.UserRef{Key: domain.UserKeyExternalID, Value: value}, nil
	}
	id, err := domain.ParseID(value)
	if err != nil {
		return domain.UserRef{}, refuse("the token's "+v.userClaim+" claim is not a user id of this service (a uuid)", nil)
	}
	return domain.UserRef{Key: domain.UserKeyID, Value: string(id)}, nil
}
