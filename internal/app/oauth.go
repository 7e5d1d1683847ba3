package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"backoffice/internal/auth"
	"backoffice/internal/domain"
	"backoffice/internal/oauth"
)

// OAuthConfig is the identity provider whose access tokens serve accepts as Bearer credentials
// (docs/credentials.md#sign-in-with-the-organisations-identity-provider). Issuer "" accepts none.
type OAuthConfig struct {
	Issuer   string
	Audience string
	// UserClaim names the token's claim that names the user; UserMatch says what its value is:
	// the user's id (userMatchID) or external id (userMatchExternalID).
	UserClaim string
	UserMatch string
	// AllowTypJWT also accepts tokens whose typ header is JWT or absent, unless they carry an ID
	// token's claims; AllowIDTokenClaims accepts those too.
	AllowTypJWT        bool
	AllowIDTokenClaims bool
	// MaxTokenLifetime is the longest a token may be valid (exp - iat).
	MaxTokenLifetime time.Duration
	// JWKSMaxAge is how long the provider's keys are trusted after a fetch.
	JWKSMaxAge time.Duration
}

// The values of BACKOFFICE_OAUTH_USER_MATCH.
const (
	userMatchID         = "id"
	userMatchExternalID = "external_id"
)

// minJWKSMaxAge keeps the keys' trusted time above twice the least interval between two fetches:
// shorter, they would lapse between two background fetches and tokens would be refused.
const minJWKSMaxAge = 30 * time.Second

func defaultOAuth() OAuthConfig {
	return OAuthConfig{UserClaim: "sub", UserMatch: userMatchID, JWKSMaxAge: oauth.DefaultKeysMaxAge, MaxTokenLifetime: oauth.DefaultMaxLifetime}
}

// loadOAuth reads the BACKOFFICE_OAUTH_* variables over the defaults. Whether they go together is
// checked once the flags are read too (verifierConfig).
func loadOAuth(getenv func(string) string, o *OAuthConfig) error {
	*o = defaultOAuth()
	o.Issuer = strings.TrimSpace(getenv("BACKOFFICE_OAUTH_ISSUER"))
	o.Audience = strings.TrimSpace(getenv("BACKOFFICE_OAUTH_AUDIENCE"))
	if v := strings.TrimSpace(getenv("BACKOFFICE_OAUTH_USER_CLAIM")); v != "" {
		o.UserClaim = v
	}
	if v := strings.TrimSpace(getenv("BACKOFFICE_OAUTH_USER_MATCH")); v != "" {
		o.UserMatch = v
	}
	for name, b := range map[string]*bool{"BACKOFFICE_OAUTH_ALLOW_TYP_JWT": &o.AllowTypJWT, "BACKOFFICE_OAUTH_ALLOW_ID_TOKEN_CLAIMS": &o.AllowIDTokenClaims} {
		if v := getenv(name); v != "" {
			var err error
			if *b, err = strconv.ParseBool(v); err != nil {
				return fmt.Errorf("%s: %q is not true or false", name, v)
			}
		}
	}
	if v := getenv("BACKOFFICE_OAUTH_MAX_TOKEN_LIFETIME"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("BACKOFFICE_OAUTH_MAX_TOKEN_LIFETIME: %q is not a duration such as 24h", v)
		}
		o.MaxTokenLifetime = d
	}
	if v := getenv("BACKOFFICE_OAUTH_JWKS_MAX_AGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("BACKOFFICE_OAUTH_JWKS_MAX_AGE: %q is not a duration such as 2m", v)
		}
		o.JWKSMaxAge = d
	}
	return nil
}

func (o *OAuthConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&o.Issuer, "oauth-issuer", o.Issuer, "issuer of the identity provider whose access tokens are accepted as Bearer credentials, an https URL; empty: none (BACKOFFICE_OAUTH_ISSUER)")
	fs.StringVar(&o.Audience, "oauth-audience", o.Audience, "this service's identifier at the identity provider, which a token's aud claim must hold (BACKOFFICE_OAUTH_AUDIENCE)")
	fs.StringVar(&o.UserClaim, "oauth-user-claim", o.UserClaim, "the token's claim that names the user (BACKOFFICE_OAUTH_USER_CLAIM)")
	fs.StringVar(&o.UserMatch, "oauth-user-match", o.UserMatch, "what the user claim holds: id (a user's id) or external_id (a user's externalId) (BACKOFFICE_OAUTH_USER_MATCH)")
	fs.BoolVar(&o.AllowTypJWT, "oauth-allow-typ-jwt", o.AllowTypJWT, "also accept tokens whose typ header is JWT or absent, besides at+jwt, unless they carry an ID token's claims (BACKOFFICE_OAUTH_ALLOW_TYP_JWT)")
	fs.BoolVar(&o.AllowIDTokenClaims, "oauth-allow-id-token-claims", o.AllowIDTokenClaims, "with --oauth-allow-typ-jwt, also accept tokens that carry an ID token's claims (nonce, at_hash, c_hash), for a provider whose access tokens are shaped as its ID tokens (BACKOFFICE_OAUTH_ALLOW_ID_TOKEN_CLAIMS)")
	fs.DurationVar(&o.MaxTokenLifetime, "oauth-max-token-lifetime", o.MaxTokenLifetime, "the longest a token may be valid, from its iat (or, without one, from now) to its exp (BACKOFFICE_OAUTH_MAX_TOKEN_LIFETIME)")
	fs.DurationVar(&o.JWKSMaxAge, "oauth-jwks-max-age", o.JWKSMaxAge, "how long the provider's keys are trusted after a fetch: a key it removes is refused within this time (BACKOFFICE_OAUTH_JWKS_MAX_AGE)")
}

// verifierConfig checks the settings together; ok is false when no provider is configured.
func (o OAuthConfig) verifierConfig() (cfg oauth.Config, ok bool, err error) {
	if o.Issuer == "" {
		if o.Audience != "" {
			return cfg, false, errors.New("BACKOFFICE_OAUTH_AUDIENCE is set but BACKOFFICE_OAUTH_ISSUER is not: set both to accept the identity provider's access tokens, or neither")
		}
		return cfg, false, nil
	}
	if o.Audience == "" {
		return cfg, false, errors.New("BACKOFFICE_OAUTH_ISSUER is set but BACKOFFICE_OAUTH_AUDIENCE is not: set this service's identifier at the identity provider, which its tokens' aud claim holds")
	}
	cfg = oauth.Config{Issuer: o.Issuer, Audience: o.Audience, UserClaim: o.UserClaim, AllowJWTType: o.AllowTypJWT,
		AllowIDTokenClaims: o.AllowIDTokenClaims, MaxLifetime: o.MaxTokenLifetime, KeysMaxAge: o.JWKSMaxAge}
	switch o.UserMatch {
	case userMatchID:
		cfg.UserKey = domain.UserKeyID
	case userMatchExternalID:
		cfg.UserKey = domain.UserKeyExternalID
	default:
		return cfg, false, fmt.Errorf("BACKOFFICE_OAUTH_USER_MATCH: %q is not %s or %s", o.UserMatch, userMatchID, userMatchExternalID)
	}
	if o.UserClaim == "" {
		return cfg, false, errors.New("BACKOFFICE_OAUTH_USER_CLAIM is empty: name the claim that names the user (default sub)")
	}
	if o.AllowIDTokenClaims && !o.AllowTypJWT {
		return cfg, false, errors.New("BACKOFFICE_OAUTH_ALLOW_ID_TOKEN_CLAIMS is true but BACKOFFICE_OAUTH_ALLOW_TYP_JWT is not: a token typed at+jwt is an access token whatever its claims; set both, or neither")
	}
	if o.MaxTokenLifetime <= 0 {
		return cfg, false, fmt.Errorf("BACKOFFICE_OAUTH_MAX_TOKEN_LIFETIME: %s is not a positive duration", o.MaxTokenLifetime)
	}
	if o.JWKSMaxAge < minJWKSMaxAge {
		return cfg, false, fmt.Errorf("BACKOFFICE_OAUTH_JWKS_MAX_AGE: %s is shorter than %s", o.JWKSMaxAge, minJWKSMaxAge)
	}
	return cfg, true, nil
}

// startTokens makes the access token check of serve, or nil when no provider is configured, and
// keeps the provider's keys fresh until ctx ends. A configuration the provider answers is wrong
// stops serve; a provider that cannot be reached does not: serve starts, says so, and accepts
// tokens once the keys are fetched (retried every few seconds), sessions and API keys meanwhile.
func startTokens(ctx context.Context, o OAuthConfig, log *slog.Logger) (auth.Tokens, error) {
	cfg, ok, err := o.verifierConfig()
	if err != nil || !ok {
		return nil, err
	}
	cfg.Logger = log.With(slog.String("component", "oauth"))
	v, err := oauth.New(ctx, cfg)
	switch {
	case errors.Is(err, oauth.ErrUnreachable):
		log.Error("identity provider unreachable at start: serving, but its access tokens are refused until its keys are fetched (retried every few seconds)",
			slog.String("issuer", cfg.Issuer), slog.String("error", err.Error()))
	case err != nil:
		return nil, fmt.Errorf("identity provider %s (BACKOFFICE_OAUTH_ISSUER): %w", cfg.Issuer, err)
	default:
		log.Info("accepting the identity provider's access tokens", slog.String("issuer", cfg.Issuer),
			slog.String("audience", cfg.Audience), slog.String("user_claim", cfg.UserClaim), slog.String("user_match", o.UserMatch),
			slog.Bool("allow_typ_jwt", cfg.AllowJWTType), slog.Bool("allow_id_token_claims", cfg.AllowIDTokenClaims),
			slog.Duration("max_token_lifetime", cfg.MaxLifetime))
	}
	go v.Run(ctx)
	return v, nil
}
