// Package oauthtest is an identity provider for tests: a discovery document and a key set served
// over TLS (httptest), keys that come and go as a test says, and tokens signed with them as the
// test asks, well-formed or not.
package oauthtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Audience is the audience the provider's tokens carry unless a test says otherwise.
const Audience = "https://backoffice.test"

// Provider serves /.well-known/openid-configuration and /jwks over TLS.
type Provider struct {
	srv *httptest.Server
	mux *http.ServeMux
	// Issuer is the provider's issuer identifier (its URL).
	Issuer string

	mu   sync.Mutex
	keys map[string]key // by kid
	// published lists the kids the key set holds, in order; a key may be known (to sign with)
	// and not published.
	published []string
	down      bool
	fetches   atomic.Int64
	// discovery, when set, replaces the discovery document; rfc8414 serves it only at RFC
	// 8414's well-known name.
	discovery map[string]any
	rfc8414   bool
}

type key struct {
	alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

// New starts a provider with one ES256 key, "k1". It stops with the test.
func New(t testing.TB) *Provider {
	p := &Provider{keys: map[string]key{}}
	p.mux = http.NewServeMux()
	p.mux.HandleFunc("GET /.well-known/openid-configuration", p.serveDiscovery)
	p.mux.HandleFunc("GET /.well-known/oauth-authorization-server", p.serveDiscovery)
	p.mux.HandleFunc("GET /jwks", p.serveKeys)
	p.srv = httptest.NewTLSServer(p.mux)
	t.Cleanup(p.srv.Close)
	p.Issuer = p.srv.URL
	p.AddKey(t, "k1", jose.ES256)
	return p
}

// Client trusts the provider's certificate.
func (p *Provider) Client() *http.Client { return p.srv.Client() }

// Handle serves more paths (a redirect, a broken document).
func (p *Provider) Handle(pattern string, h http.Handler) { p.mux.Handle(pattern, h) }

// Transport answers requests for the provider's URLs in memory, without the network: for tests
// in a synctest bubble, whose fake clock network waits would escape.
func (p *Provider) Transport() http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		p.mux.ServeHTTP(rec, req)
		return rec.Result(), nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// CertificatePEM is the provider's TLS certificate, to trust it through SSL_CERT_FILE.
func (p *Provider) CertificatePEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})
}

// AddKey makes a key of alg (RS256, PS256, ES256, ES384 or EdDSA) under kid and publishes it.
func (p *Provider) AddKey(t testing.TB, kid string, alg jose.SignatureAlgorithm) {
	t.Helper()
	var priv crypto.Signer
	var err error
	switch alg {
	case jose.RS256, jose.PS256:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.ES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.ES384:
		priv, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	default:
		t.Fatalf("oauthtest: no key for %s", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys[kid] = key{alg: alg, priv: priv}
	p.published = append(p.published, kid)
}

// AddRSAKey makes an RS256 key of bits under kid and publishes it: for keys too short to trust.
func (p *Provider) AddRSAKey(t testing.TB, kid string, bits int) {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys[kid] = key{alg: jose.RS256, priv: priv}
	p.published = append(p.published, kid)
}

// Unpublish removes kid from the key set; tokens can still be signed with it.
func (p *Provider) Unpublish(kid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, k := range p.published {
		if k == kid {
			p.published = append(p.published[:i], p.published[i+1:]...)
			return
		}
	}
}

// SetDown makes every document answer 503 (true) or come back (false).
func (p *Provider) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
}

// SetDiscovery replaces the discovery document (nil: the provider's own).
func (p *Provider) SetDiscovery(doc map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.discovery = doc
}

// OnlyRFC8414 serves the discovery document at /.well-known/oauth-authorization-server alone.
func (p *Provider) OnlyRFC8414() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rfc8414 = true
}

// KeyFetches counts the requests for the key set.
func (p *Provider) KeyFetches() int64 { return p.fetches.Load() }

func (p *Provider) serveDiscovery(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	down, doc, rfc8414 := p.down, p.discovery, p.rfc8414
	p.mu.Unlock()
	if down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	if rfc8414 != (r.URL.Path == "/.well-known/oauth-authorization-server") {
		http.NotFound(w, r)
		return
	}
	if doc == nil {
		doc = map[string]any{"issuer": p.Issuer, "jwks_uri": p.Issuer + "/jwks"}
	}
	writeJSON(w, doc)
}

func (p *Provider) serveKeys(w http.ResponseWriter, _ *http.Request) {
	p.fetches.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	var set jose.JSONWebKeySet
	for _, kid := range p.published {
		k := p.keys[kid]
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.priv.Public(), KeyID: kid, Algorithm: string(k.alg), Use: "sig"})
	}
	writeJSON(w, set)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Claims are a token's claims. The zero value of a field leaves the claim out; Token fills the
// usual ones (see Token).
type Claims struct {
	Issuer    string
	Subject   string
	Audience  []string
	Expiry    time.Time
	NotBefore time.Time
	IssuedAt  time.Time
	// Extra claims, merged in.
	Extra map[string]any
}

// Header are a token's header fields beyond alg: kid and typ ("" leaves one out), and any others.
type Header struct {
	KeyID string
	Type  string
	Extra map[string]any
}

// Token signs a token for subject, valid at now for an hour, with the provider's key k1 and typ
// at+jwt; change lets the test alter the claims and the header first.
func (p *Provider) Token(t testing.TB, subject string, now time.Time, change func(*Claims, *Header)) string {
	t.Helper()
	c := Claims{Issuer: p.Issuer, Subject: subject, Audience: []string{Audience},
		Expiry: now.Add(time.Hour), IssuedAt: now.Add(-time.Second)}
	h := Header{KeyID: "k1", Type: "at+jwt"}
	if change != nil {
		change(&c, &h)
	}
	return p.Sign(t, c, h)
}

// Sign signs claims under the header's kid (a key the provider knows, published or not).
func (p *Provider) Sign(t testing.TB, c Claims, h Header) string {
	t.Helper()
	kid := h.KeyID
	if kid == "" {
		kid = "k1"
	}
	p.mu.Lock()
	k, ok := p.keys[kid]
	p.mu.Unlock()
	if !ok {
		t.Fatalf("oauthtest: no key %q", kid)
	}
	return SignWith(t, k.alg, k.priv, c, h)
}

// SignWith signs claims with any key and algorithm, HMAC included (for tokens that must be
// refused).
func SignWith(t testing.TB, alg jose.SignatureAlgorithm, signingKey any, c Claims, h Header) string {
	t.Helper()
	opts := &jose.SignerOptions{}
	if h.Type != "" {
		opts = opts.WithType(jose.ContentType(h.Type))
	}
	if h.KeyID != "" {
		opts = opts.WithHeader(jose.HeaderKey("kid"), h.KeyID)
	}
	for k, v := range h.Extra {
		opts = opts.WithHeader(jose.HeaderKey(k), v)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: signingKey}, opts)
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]any{}
	put := func(name string, v any, set bool) {
		if set {
			claims[name] = v
		}
	}
	put("iss", c.Issuer, c.Issuer != "")
	put("sub", c.Subject, c.Subject != "")
	put("aud", c.Audience, c.Audience != nil)
	put("exp", jwt.NewNumericDate(c.Expiry), !c.Expiry.IsZero())
	put("nbf", jwt.NewNumericDate(c.NotBefore), !c.NotBefore.IsZero())
	put("iat", jwt.NewNumericDate(c.IssuedAt), !c.IssuedAt.IsZero())
	for k, v := range c.Extra {
		claims[k] = v
	}
	raw, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
