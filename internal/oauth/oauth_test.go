package oauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"backoffice/internal/auth"
	"backoffice/internal/domain"
	"backoffice/internal/oauth"
	"backoffice/internal/oauth/oauthtest"
)

const user = "00000000-0000-4000-8000-000000000101"

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func config(p *oauthtest.Provider, c *clock) oauth.Config {
	return oauth.Config{Issuer: p.Issuer, Audience: oauthtest.Audience, HTTPClient: p.Client(), Now: c.Now}
}

func newVerifier(t *testing.T, cfg oauth.Config) *oauth.Verifier {
	t.Helper()
	v, err := oauth.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// refusedWith checks that err is a refusal whose description holds want.
func refusedWith(t *testing.T, err error, want string) {
	t.Helper()
	var te *auth.TokenError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v; want a refusal (*auth.TokenError) saying %q", err, want)
	}
	if !strings.Contains(te.Description, want) {
		t.Fatalf("refused with %q; want %q", te.Description, want)
	}
	if !auth.Failed(err) {
		t.Fatalf("a refusal must count as a failed authentication: %v", err)
	}
}

// uncheckedWith checks a token that could not be checked (the provider's keys not available):
// refused, but not counted as the caller's failed authentication.
func uncheckedWith(t *testing.T, err error) {
	t.Helper()
	var te *auth.TokenError
	if !errors.As(err, &te) || !te.Unchecked || !strings.Contains(te.Description, "signing keys are not available") {
		t.Fatalf("err = %v; want an unchecked token's refusal saying the signing keys are not available", err)
	}
	if auth.Failed(err) {
		t.Fatalf("an unchecked token must not count as a failed authentication: %v", err)
	}
}

func TestVerifyAcceptsEachAlgorithm(t *testing.T) {
	p := oauthtest.New(t)
	c := newClock()
	for _, alg := range []jose.SignatureAlgorithm{jose.RS256, jose.PS256, jose.ES384} {
		p.AddKey(t, string(alg), alg)
	}
	v := newVerifier(t, config(p, c))
	for _, kid := range []string{"k1", "RS256", "PS256", "ES384"} {
		tok := p.Token(t, strings.ToUpper(user), c.Now(), func(_ *oauthtest.Claims, h *oauthtest.Header) { h.KeyID = kid })
		ref, err := v.Verify(context.Background(), tok)
		if err != nil {
			t.Fatalf("%s: %v", kid, err)
		}
		if want := (domain.UserRef{Key: domain.UserKeyID, Value: user}); ref != want {
			t.Errorf("%s: user %+v; want %+v (the id in its canonical form)", kid, ref, want)
		}
	}
}

// Every rule of the check refuses, and says which.
func TestVerifyRefusals(t *testing.T) {
	p := oauthtest.New(t)
	c := newClock()
	now := c.Now()
	v := newVerifier(t, config(p, c))
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	// The classic confusion: an HMAC keyed with the provider's public key, which anyone can fetch.
	publicDER := publicKeyDER(t, p)
	base := oauthtest.Claims{Issuer: p.Issuer, Subject: user, Audience: []string{oauthtest.Audience},
		Expiry: now.Add(time.Hour), IssuedAt: now}
	token := func(change func(*oauthtest.Claims, *oauthtest.Header)) string {
		return p.Token(t, user, now, change)
	}
	for _, tc := range []struct {
		name, token, want string
	}{
		{"not a JWT", "abc.def.ghi", "not a JWT signed with an accepted algorithm"},
		{"alg none", unsigned(t, `{"alg":"none","typ":"at+jwt","kid":"k1"}`, base), "not a JWT signed with an accepted algorithm"},
		{"HS256 keyed with the public key", oauthtest.SignWith(t, jose.HS256, publicDER, base, oauthtest.Header{KeyID: "k1", Type: "at+jwt"}), "not a JWT signed with an accepted algorithm"},
		{"typ JWT", token(func(_ *oauthtest.Claims, h *oauthtest.Header) { h.Type = "JWT" }), "typ header is not at+jwt"},
		{"no typ", token(func(_ *oauthtest.Claims, h *oauthtest.Header) { h.Type = "" }), "typ header is not at+jwt"},
		{"a critical header", token(func(_ *oauthtest.Claims, h *oauthtest.Header) {
			h.Extra = map[string]any{"crit": []string{"urn:example:policy"}, "urn:example:policy": "strict"}
		}), "unsupported critical header"},
		{"an empty critical header", token(func(_ *oauthtest.Claims, h *oauthtest.Header) { h.Extra = map[string]any{"crit": []string{}} }), "unsupported critical header"},
		{"an ID token's typ", token(func(_ *oauthtest.Claims, h *oauthtest.Header) { h.Type = "id_token+jwt" }), "typ header is not at+jwt"},
		{"no kid", oauthtest.SignWith(t, jose.ES256, other, base, oauthtest.Header{Type: "at+jwt"}), "names no signing key"},
		{"unknown kid", oauthtest.SignWith(t, jose.ES256, other, base, oauthtest.Header{KeyID: "k9", Type: "at+jwt"}), "not one the identity provider publishes"},
		{"another key under the provider's kid", oauthtest.SignWith(t, jose.ES256, other, base, oauthtest.Header{KeyID: "k1", Type: "at+jwt"}), "signature does not verify"},
		{"payload changed after signing", tamper(t, token(nil)), "signature does not verify"},
		{"another issuer", token(func(c *oauthtest.Claims, _ *oauthtest.Header) { c.Issuer = "https://idp.example" }), "issuer is not the configured identity provider"},
		{"issuer with a trailing slash", token(func(c *oauthtest.Claims, _ *oauthtest.Header) { c.Issuer += "/" }), "issuer is not the configured identity provider"},
		{"no issuer", token(func(c *oauthtest.Claims, _ *oauthtest.Header) { c.Issuer = "" }), "issuer is not the configured identity provider"},
		{"another audience", token(func(c *oauthtest.Claims, _ *oauthtest.Header) { c.Audience = []string{"https://other.example"} }), "audience does not include this service"},
		{"no audience", token(func(c *oauthtest.Claims, _ *oauthtest.Header) { c.Audience = nil }), "audience does not include this service"},
		{"exp not a number", token(func(c *oauthtest.Claims, _ *oauthtest.Header) { c.Extra = map[string]any{"exp": "tomorrow"} }), "not a JSON object of the registered types"},
		{"aud not a string", token(func(c *oauthtest.Claims, _ *oauthtest.Header) { c.Extra = map[string]any{"aud": 7} }), "not a JSON object of the registered types"},
		{"no exp", token(func(c *oauthtest.Claims, _ *oauthtest.Header) { c.Expiry = time.Time{} }), "no expiry"},
		{"expired past the leeway", token(func(c *oauthtest.Claims, _ *oauthtest.Header) { c.Expiry = now.Add(-oauth.Leeway - time.Second) }), "has expired"},
		{"nbf past the leeway", token(func(c *oauthtest.Claims, _ *oauthtest.Header) { c.NotBefore = now.Add(oauth.Leeway + time.Second) }), "not valid yet"},
		{"valid for ten years", token(func(c *oauthtest.Claims, _ *oauthtest.Header) { c.Expiry = now.AddDate(10, 0, 0) }), "lifetime is longer than"},
		{"lifetime past the maximum", token(func(c *oauthtest.Claims, _ *oauthtest.Header) {
			c.IssuedAt, c.Expiry = now.Add(-time.Hour), now.Add(oauth.DefaultMaxLifetime-time.Hour+time.Second)
		}), "lifetime is longer than"},
		{"no iat, exp past the maximum from now", token(func(c *oauthtest.Claims, _ *oauthtest.Header) {
			c.IssuedAt, c.Expiry = time.Time{}, now.Add(oauth.DefaultMaxLifetime+time.Second)
		}), "lifetime is longer than"},
		{"iat past the leeway", token(func(c *oauthtest.Claims, _ *oauthtest.Header) { c.IssuedAt = now.Add(oauth.Leeway + time.Second) }), "issued in the future"},
		{"no sub", token(func(c *oauthtest.Claims, _ *oauthtest.Header) { c.Subject = "" }), "has no sub claim"},
		{"sub not a user id", token(func(c *oauthtest.Claims, _ *oauthtest.Header) { c.Subject = "alice@example.com" }), "not a user id of this service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Verify(context.Background(), tc.token)
			refusedWith(t, err, tc.want)
		})
	}
}

func TestVerifyLeeway(t *testing.T) {
	p := oauthtest.New(t)
	c := newClock()
	now := c.Now()
	v := newVerifier(t, config(p, c))
	for name, change := range map[string]func(*oauthtest.Claims, *oauthtest.Header){
		"expired within the leeway": func(c *oauthtest.Claims, _ *oauthtest.Header) { c.Expiry = now.Add(-oauth.Leeway + time.Second) },
		"nbf within the leeway":     func(c *oauthtest.Claims, _ *oauthtest.Header) { c.NotBefore = now.Add(oauth.Leeway - time.Second) },
		"iat within the leeway":     func(c *oauthtest.Claims, _ *oauthtest.Header) { c.IssuedAt = now.Add(oauth.Leeway - time.Second) },
		"no iat":                    func(c *oauthtest.Claims, _ *oauthtest.Header) { c.IssuedAt = time.Time{} },
		"aud among several": func(c *oauthtest.Claims, _ *oauthtest.Header) {
			c.Audience = []string{"https://a.example", oauthtest.Audience}
		},
		"typ application/at+jwt": func(_ *oauthtest.Claims, h *oauthtest.Header) { h.Type = "application/AT+JWT" },
		"lifetime the maximum": func(c *oauthtest.Claims, _ *oauthtest.Header) {
			c.IssuedAt, c.Expiry = now.Add(-time.Hour), now.Add(oauth.DefaultMaxLifetime-time.Hour)
		},
		"no iat, exp the maximum from now": func(c *oauthtest.Claims, _ *oauthtest.Header) {
			c.IssuedAt, c.Expiry = time.Time{}, now.Add(oauth.DefaultMaxLifetime)
		},
	} {
		if _, err := v.Verify(context.Background(), p.Token(t, user, now, change)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestTokenTypeJWTWhenAllowed(t *testing.T) {
	p := oauthtest.New(t)
	c := newClock()
	cfg := config(p, c)
	cfg.AllowJWTType = true
	v := newVerifier(t, cfg)
	for _, typ := range []string{"JWT", "", "at+jwt"} {
		tok := p.Token(t, user, c.Now(), func(_ *oauthtest.Claims, h *oauthtest.Header) { h.Type = typ })
		if _, err := v.Verify(context.Background(), tok); err != nil {
			t.Errorf("typ %q: %v", typ, err)
		}
	}
	tok := p.Token(t, user, c.Now(), func(_ *oauthtest.Claims, h *oauthtest.Header) { h.Type = "id_token+jwt" })
	_, err := v.Verify(context.Background(), tok)
	refusedWith(t, err, "typ header is not at+jwt")
}

// With typ JWT allowed, the claims that only an ID token carries tell it from an access token.
func TestIDTokenShapeRefusedWhenTypJWTAllowed(t *testing.T) {
	p := oauthtest.New(t)
	c := newClock()
	cfg := config(p, c)
	cfg.AllowJWTType = true
	v := newVerifier(t, cfg)
	cfg.AllowIDTokenClaims = true
	lenient := newVerifier(t, cfg)
	idToken := map[string]any{"nonce": "n-0S6_WzA2Mj", "at_hash": "77QmUPtjPfzWtF2AnpK9RQ", "azp": "backoffice", "auth_time": c.Now().Unix()}
	for _, tc := range []struct {
		name     string
		typ      string
		extra    map[string]any
		accepted bool
		// lenient is what the verifier that allows ID token claims answers.
		lenient bool
	}{
		{"an ID token", "JWT", idToken, false, true},
		{"an ID token, no typ", "", idToken, false, true},
		{"nonce", "JWT", map[string]any{"nonce": "n-0S6_WzA2Mj", "scope": "backoffice"}, false, true},
		{"at_hash", "JWT", map[string]any{"at_hash": "77QmUPtjPfzWtF2AnpK9RQ", "client_id": "svc"}, false, true},
		{"c_hash", "JWT", map[string]any{"c_hash": "LDktKdoQak3Pk0cnXxCltA"}, false, true},
		{"Keycloak's ID token", "JWT", map[string]any{"typ": "ID", "azp": "backoffice", "auth_time": c.Now().Unix()}, false, true},
		{"Keycloak's access token", "JWT", map[string]any{"typ": "Bearer", "azp": "svc", "scope": "profile email", "auth_time": c.Now().Unix()}, true, true},
		{"Keycloak's access token with the sign-in's nonce", "JWT", map[string]any{"typ": "Bearer", "azp": "svc", "scope": "openid", "nonce": "n-0S6_WzA2Mj"}, true, true},
		{"Okta's access token", "", map[string]any{"cid": "0oa1", "scp": []string{"backoffice"}, "auth_time": c.Now().Unix()}, true, true},
		{"Entra ID's access token", "JWT", map[string]any{"azp": "c0ffee", "scp": "Leads.Read", "ver": "2.0"}, true, true},
		{"typed at+jwt, with a nonce", "at+jwt", map[string]any{"nonce": "n-0S6_WzA2Mj"}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := p.Token(t, user, c.Now(), func(c *oauthtest.Claims, h *oauthtest.Header) { h.Type, c.Extra = tc.typ, tc.extra })
			_, err := v.Verify(context.Background(), tok)
			if tc.accepted {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			} else {
				refusedWith(t, err, "shaped as an ID token")
			}
			if _, err := lenient.Verify(context.Background(), tok); (err == nil) != tc.lenient {
				t.Errorf("with ID token claims allowed: %v", err)
			}
		})
	}
}

func TestUserClaimAndExternalID(t *testing.T) {
	p := oauthtest.New(t)
	c := newClock()
	cfg := config(p, c)
	cfg.UserClaim, cfg.UserKey = "oid", domain.UserKeyExternalID
	v := newVerifier(t, cfg)
	tok := p.Token(t, "client-7", c.Now(), func(c *oauthtest.Claims, _ *oauthtest.Header) { c.Extra = map[string]any{"oid": "Okta-00u1"} })
	ref, err := v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if want := (domain.UserRef{Key: domain.UserKeyExternalID, Value: "Okta-00u1"}); ref != want {
		t.Errorf("user %+v; want %+v: the configured claim, as it is", ref, want)
	}
	for name, extra := range map[string]map[string]any{"missing": nil, "not a string": {"oid": 42}, "empty": {"oid": ""}} {
		tok := p.Token(t, user, c.Now(), func(c *oauthtest.Claims, _ *oauthtest.Header) { c.Extra = extra })
		_, err := v.Verify(context.Background(), tok)
		t.Run(name, func(t *testing.T) { refusedWith(t, err, "has no oid claim") })
	}
}

// A key the provider adds is accepted at its first token: the unknown kid makes the service fetch
// the key set again. Unknown kids cannot make it fetch more than once per interval.
func TestNewKeyIsFetchedOnFirstUse(t *testing.T) {
	p := oauthtest.New(t)
	c := newClock()
	v := newVerifier(t, config(p, c))
	if got := p.KeyFetches(); got != 1 {
		t.Fatalf("%d key fetches at start; want 1", got)
	}
	c.Advance(time.Minute)
	p.AddKey(t, "k2", jose.RS256)
	tok := p.Token(t, user, c.Now(), func(_ *oauthtest.Claims, h *oauthtest.Header) { h.KeyID = "k2" })
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatalf("a token under the new key: %v", err)
	}
	if got := p.KeyFetches(); got != 2 {
		t.Fatalf("%d key fetches; want 2", got)
	}
	// A guesser's kids, in a burst: refused, and no fetch until the interval has passed.
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for i := range 20 {
		bogus := oauthtest.SignWith(t, jose.ES256, other, oauthtest.Claims{Issuer: p.Issuer, Subject: user,
			Audience: []string{oauthtest.Audience}, Expiry: c.Now().Add(time.Hour)}, oauthtest.Header{KeyID: "guess-" + string(rune('a'+i)), Type: "at+jwt"})
		_, err := v.Verify(context.Background(), bogus)
		refusedWith(t, err, "not one the identity provider publishes")
		c.Advance(100 * time.Millisecond)
	}
	if got := p.KeyFetches(); got != 2 {
		t.Errorf("%d key fetches after a burst of unknown kids; want still 2", got)
	}
	c.Advance(10 * time.Second)
	p.AddKey(t, "k3", jose.ES256)
	tok = p.Token(t, user, c.Now(), func(_ *oauthtest.Claims, h *oauthtest.Header) { h.KeyID = "k3" })
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatalf("a token under a key added after the interval: %v", err)
	}
}

// A key the provider removes is refused once the key set in hand is past its trusted time, also
// for a token accepted under it before (the verified-token cache does not outlive the key).
func TestRemovedKeyIsRefusedWithinItsTrustedTime(t *testing.T) {
	p := oauthtest.New(t)
	p.AddKey(t, "k2", jose.ES256)
	c := newClock()
	cfg := config(p, c)
	cfg.KeysMaxAge = time.Minute
	v := newVerifier(t, cfg)
	tok := p.Token(t, user, c.Now(), nil) // under k1
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	p.Unpublish("k1")
	c.Advance(cfg.KeysMaxAge - time.Second)
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatalf("within the trusted time the key set in hand holds: %v", err)
	}
	c.Advance(time.Second)
	_, err := v.Verify(context.Background(), tok)
	refusedWith(t, err, "not one the identity provider publishes")
	k2 := p.Token(t, user, c.Now(), func(_ *oauthtest.Claims, h *oauthtest.Header) { h.KeyID = "k2" })
	if _, err := v.Verify(context.Background(), k2); err != nil {
		t.Fatalf("the key that stays: %v", err)
	}
}

// A provider that is down changes nothing while the keys in hand are trusted; past that, tokens
// are refused (401, never a 5xx) until it is back.
func TestProviderDown(t *testing.T) {
	p := oauthtest.New(t)
	c := newClock()
	cfg := config(p, c)
	v := newVerifier(t, cfg)
	tok := p.Token(t, user, c.Now(), nil)
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	p.SetDown(true)
	c.Advance(oauth.DefaultKeysMaxAge / 2)
	fresh := p.Token(t, user, c.Now(), nil)
	for _, tk := range []string{tok, fresh} {
		if _, err := v.Verify(context.Background(), tk); err != nil {
			t.Fatalf("provider down, keys still trusted: %v", err)
		}
	}
	c.Advance(oauth.DefaultKeysMaxAge / 2)
	_, err := v.Verify(context.Background(), tok)
	uncheckedWith(t, err)
	p.SetDown(false)
	c.Advance(10 * time.Second)
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatalf("provider back: %v", err)
	}
}

// A request that waits for a fetch gives up with its context; the fetch goes on for the others.
func TestVerifyHonoursTheRequestsContext(t *testing.T) {
	p := oauthtest.New(t)
	c := newClock()
	v := newVerifier(t, config(p, c))
	c.Advance(oauth.DefaultKeysMaxAge)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := v.Verify(ctx, p.Token(t, user, c.Now(), nil))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want the context's", err)
	}
	var te *auth.TokenError
	if errors.As(err, &te) {
		t.Fatalf("a request that left is no refusal of its token: %v", err)
	}
}

func TestStart(t *testing.T) {
	t.Run("unreachable: starts, and works once the provider is back", func(t *testing.T) {
		p := oauthtest.New(t)
		p.SetDown(true)
		c := newClock()
		v, err := oauth.New(context.Background(), config(p, c))
		if !errors.Is(err, oauth.ErrUnreachable) || v == nil {
			t.Fatalf("New = %v, %v; want a verifier and ErrUnreachable", v, err)
		}
		_, err = v.Verify(context.Background(), p.Token(t, user, c.Now(), nil))
		uncheckedWith(t, err)
		p.SetDown(false)
		c.Advance(10 * time.Second)
		if _, err := v.Verify(context.Background(), p.Token(t, user, c.Now(), nil)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("RFC 8414 metadata", func(t *testing.T) {
		p := oauthtest.New(t)
		p.OnlyRFC8414()
		c := newClock()
		v := newVerifier(t, config(p, c))
		if _, err := v.Verify(context.Background(), p.Token(t, user, c.Now(), nil)); err != nil {
			t.Fatal(err)
		}
	})
	p := oauthtest.New(t)
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	p.Handle("GET /plain", http.RedirectHandler("http://"+strings.TrimPrefix(p.Issuer, "https://")+"/jwks", http.StatusFound))
	for _, tc := range []struct {
		name string
		cfg  func(*oauth.Config)
		doc  map[string]any
		want string
	}{
		{"http issuer", func(c *oauth.Config) { c.Issuer = "http://idp.example" }, nil, "not an https URL"},
		{"issuer with a query", func(c *oauth.Config) { c.Issuer += "?x=1" }, nil, "not an https URL"},
		{"no audience", func(c *oauth.Config) { c.Audience = " " }, nil, "audience is empty"},
		{"no discovery document", func(c *oauth.Config) { c.Issuer += "/nowhere" }, nil, "no discovery document"},
		{"another issuer in the document", nil, map[string]any{"issuer": p.Issuer + "/", "jwks_uri": p.Issuer + "/jwks"}, "names issuer"},
		{"no jwks_uri", nil, map[string]any{"issuer": p.Issuer}, "is not an https URL"},
		{"http jwks_uri", nil, map[string]any{"issuer": p.Issuer, "jwks_uri": "http://" + strings.TrimPrefix(p.Issuer, "https://") + "/jwks"}, "is not an https URL"},
		{"a redirect away from https", nil, map[string]any{"issuer": p.Issuer, "jwks_uri": p.Issuer + "/plain"}, "not https"},
		{"plain HTTP at the https issuer", func(c *oauth.Config) { c.Issuer = "https://" + strings.TrimPrefix(plain.URL, "http://") }, nil, "speaks plain HTTP, not TLS"},
		{"plain HTTP at the https jwks_uri", nil, map[string]any{"issuer": p.Issuer, "jwks_uri": "https://" + strings.TrimPrefix(plain.URL, "http://") + "/jwks"}, "speaks plain HTTP, not TLS"},
		{"jwks_uri not found", nil, map[string]any{"issuer": p.Issuer, "jwks_uri": p.Issuer + "/missing"}, "404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(p, newClock())
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			p.SetDiscovery(tc.doc)
			defer p.SetDiscovery(nil)
			v, err := oauth.New(context.Background(), cfg)
			if err == nil || v != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, %v; want a refusal to start saying %q", v, err, tc.want)
			}
			if errors.Is(err, oauth.ErrUnreachable) {
				t.Fatalf("a wrong answer is no unreachable provider: %v", err)
			}
		})
	}
}

// Keys the provider cannot mean for us are left out; the others serve.
func TestKeySetFilters(t *testing.T) {
	p := oauthtest.New(t)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	public, err := json.Marshal(jose.JSONWebKey{Key: &ec.PublicKey, KeyID: "ok", Algorithm: "ES256"})
	if err != nil {
		t.Fatal(err)
	}
	private, _ := json.Marshal(jose.JSONWebKey{Key: ec, KeyID: "private", Algorithm: "ES256"})
	enc, _ := json.Marshal(jose.JSONWebKey{Key: &ec.PublicKey, KeyID: "enc", Use: "enc"})
	wrongAlg, _ := json.Marshal(jose.JSONWebKey{Key: &ec.PublicKey, KeyID: "rs", Algorithm: "RS256"})
	set := `{"keys":[{"kty":"oct","kid":"hmac","k":"c2VjcmV0"},{"kty":"weird","kid":"w"},` + string(private) + `,` + string(enc) + `,` + string(wrongAlg) + `,` + string(public) + `]}`
	p.Handle("GET /odd-jwks", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(set)) }))
	p.SetDiscovery(map[string]any{"issuer": p.Issuer, "jwks_uri": p.Issuer + "/odd-jwks"})
	c := newClock()
	v := newVerifier(t, config(p, c))
	claims := oauthtest.Claims{Issuer: p.Issuer, Subject: user, Audience: []string{oauthtest.Audience}, Expiry: c.Now().Add(time.Hour)}
	if _, err := v.Verify(context.Background(), oauthtest.SignWith(t, jose.ES256, ec, claims, oauthtest.Header{KeyID: "ok", Type: "at+jwt"})); err != nil {
		t.Fatalf("the usable key: %v", err)
	}
	for _, kid := range []string{"hmac", "w", "private", "enc", "rs"} {
		_, err := v.Verify(context.Background(), oauthtest.SignWith(t, jose.ES256, ec, claims, oauthtest.Header{KeyID: kid, Type: "at+jwt"}))
		t.Run(kid, func(t *testing.T) { refusedWith(t, err, "not one the identity provider publishes") })
	}
}

// An RSA key shorter than 2048 bits (RFC 7518 section 3.3) is left out of the key set, said so
// in the log, and a token under it is refused for that reason.
func TestShortRSAKeyRefused(t *testing.T) {
	p := oauthtest.New(t)
	p.AddRSAKey(t, "rsa1024", 1024)
	p.AddRSAKey(t, "rsa2048", 2048)
	c := newClock()
	cfg := config(p, c)
	var logs strings.Builder
	var mu sync.Mutex
	cfg.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	v := newVerifier(t, cfg)
	fetches := p.KeyFetches()
	_, err := v.Verify(context.Background(), p.Token(t, user, c.Now(), func(_ *oauthtest.Claims, h *oauthtest.Header) { h.KeyID = "rsa1024" }))
	refusedWith(t, err, "RSA key shorter than 2048 bits")
	if got := p.KeyFetches(); got != fetches {
		t.Errorf("a token under a refused key made the service fetch the keys again (%d fetches; want %d)", got, fetches)
	}
	if _, err := v.Verify(context.Background(), p.Token(t, user, c.Now(), func(_ *oauthtest.Claims, h *oauthtest.Header) { h.KeyID = "rsa2048" })); err != nil {
		t.Fatalf("a 2048-bit key: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "rsa1024") || !strings.Contains(logs.String(), "bits=1024") {
		t.Errorf("the short key is not in the log as a warning:\n%s", logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// Run keeps the keys fresh in the background: every half of their trusted time, so a request
// never finds them stale while the provider answers.
func TestRunRefreshesAtHalfTheTrustedTime(t *testing.T) {
	p := oauthtest.New(t)
	synctest.Test(t, func(t *testing.T) {
		cfg := oauth.Config{Issuer: p.Issuer, Audience: oauthtest.Audience, HTTPClient: &http.Client{Transport: p.Transport()}, KeysMaxAge: time.Minute}
		v := newVerifier(t, cfg)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { v.Run(ctx); close(done) }()
		start := p.KeyFetches()
		time.Sleep(5*time.Minute + time.Second)
		synctest.Wait()
		if got := p.KeyFetches() - start; got != 10 {
			t.Errorf("%d fetches in 5 minutes with keys trusted for 1; want 10", got)
		}
		// Requests never waited: the set in hand was always fresh.
		if _, err := v.Verify(context.Background(), p.Token(t, user, time.Now(), nil)); err != nil {
			t.Fatal(err)
		}
		cancel()
		<-done
	})
}

// publicKeyDER is the DER of the provider's key k1, as its JWKS publishes it.
func publicKeyDER(t *testing.T, p *oauthtest.Provider) []byte {
	t.Helper()
	res, err := p.Client().Get(p.Issuer + "/jwks")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(res.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(set.Key("k1")[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// unsigned is a token with header h, claims c and an empty signature ("alg": "none").
func unsigned(t *testing.T, h string, c oauthtest.Claims) string {
	t.Helper()
	payload, err := json.Marshal(map[string]any{"iss": c.Issuer, "sub": c.Subject, "aud": c.Audience, "exp": c.Expiry.Unix()})
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(h)) + "." + enc(payload) + "."
}

// tamper changes the token's subject after it was signed.
func tamper(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(payload), user, "00000000-0000-4000-8000-000000000999", 1)
	if changed == string(payload) {
		t.Fatal("tamper: nothing changed")
	}
	parts[1] = base64.RawURLEncoding.EncodeToString([]byte(changed))
	return strings.Join(parts, ".")
}
