package oauth

import (
	"backoffice/internal/auth"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"golang.org/x/sync/singleflight"
)

// Fetching the provider's documents.
const (
	// refetchInterval is the least time between two fetches of the keys: a token under an unknown
	// kid asks for one, and must not be able to make the service hammer the provider.
	refetchInterval = 10 * time.Second
	// fetchTimeout bounds one fetch (discovery and keys); a request waiting for it waits no longer.
	fetchTimeout = 5 * time.Second
	// maxDocument bounds a discovery document or a key set.
	maxDocument = 1 << 20
	// minRSABits is the shortest RSA key trusted (RFC 7518 section 3.3).
	minRSABits = 2048
)

// signingKey is a public key of the provider's key set, with its RFC 7638 thumbprint: what a
// verified token remembers of the key that signed it.
type signingKey struct {
	jwk        jose.JSONWebKey
	thumbprint string
}

// keySet is one fetch of the provider's keys, by kid.
type keySet struct {
	byKid map[string][]signingKey
	// short are the kids of RSA keys left out for being shorter than minRSABits, with their
	// lengths: a token under one is refused for that reason.
	short   map[string]int
	fetched time.Time
}

// find is the key under kid that may check a signature made with alg: a key that names an
// algorithm names the only one it is for.
func (s *keySet) find(kid, alg string) (signingKey, bool) {
	for _, k := range s.byKid[kid] {
		if k.jwk.Algorithm == "" || k.jwk.Algorithm == alg {
			return k, true
		}
	}
	return signingKey{}, false
}

// has reports whether the set still holds the key with kid and thumbprint.
func (s *keySet) has(kid, thumbprint string) bool {
	for _, k := range s.byKid[kid] {
		if k.thumbprint == thumbprint {
			return true
		}
	}
	return false
}

// keyCache holds the provider's keys. A key set is trusted for maxAge after it was fetched and
// not a moment longer, whether or not a later fetch succeeds: a key the provider removed is
// refused within maxAge, and so is every key while the provider cannot be reached for longer.
// Fetches happen one at a time, at most one per refetchInterval; requests read the current set
// without a lock.
type keyCache struct {
	issuer string
	client *http.Client
	maxAge time.Duration
	now    func() time.Time
	log    *slog.Logger

	set atomic.Pointer[keySet]

	// fetches lets one fetch run at a time, which the requests that need it wait for together.
	fetches singleflight.Group

	mu sync.Mutex
	// jwksURI is the discovery document's, once one was read.
	jwksURI   string
	lastStart time.Time
	lastErr   error
}

func newKeyCache(issuer string, client *http.Client, maxAge time.Duration, now func() time.Time, log *slog.Logger) *keyCache {
	return &keyCache{issuer: issuer, client: client, maxAge: maxAge, now: now, log: log}
}

// fetchClient is the client the documents are fetched with: c, or one over the system's
// certificate store, that follows no redirect away from https.
func fetchClient(c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	} else {
		out.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	if out.Timeout == 0 {
		out.Timeout = fetchTimeout
	}
	out.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != "https" {
			return fmt.Errorf("redirected to %s: %w", req.URL.Redacted(), errNotHTTPS)
		}
		if len(via) >= 5 {
			return errors.New("more than 5 redirects")
		}
		return nil
	}
	return &out
}

// fresh is the key set if it is still trusted at now.
func (c *keyCache) fresh(now time.Time) *keySet {
	s := c.set.Load()
	if s == nil || now.Sub(s.fetched) >= c.maxAge {
		return nil
	}
	return s
}

// key finds the key under kid for alg: in the trusted key set, or else in one fetched now (an
// unknown kid may be a key the provider has just added; an untrusted set must be fetched again).
func (c *keyCache) key(ctx context.Context, kid, alg string) (signingKey, error) {
	s := c.fresh(c.now())
	if s != nil {
		if k, ok := s.find(kid, alg); ok {
			return k, nil
		}
		if err := s.refusedKey(kid, alg); err != nil {
			return signingKey{}, err
		}
	}
	if err := c.refresh(ctx); err != nil {
		return signingKey{}, err
	}
	if err := ctx.Err(); err != nil {
		return signingKey{}, err // nobody waits for the answer
	}
	s = c.fresh(c.now())
	if s == nil {
		// Not the token's fault: refused, but not counted as a failed authentication, so that an
		// outage of the provider does not lock out the addresses of its users.
		return signingKey{}, &auth.TokenError{Description: "the identity provider's signing keys are not available; try again shortly", Err: c.lastError(), Unchecked: true}
	}
	if k, ok := s.find(kid, alg); ok {
		return k, nil
	}
	if err := s.refusedKey(kid, alg); err != nil {
		return signingKey{}, err
	}
	return signingKey{}, refuse("the token's signing key (kid) is not one the identity provider publishes", nil)
}

// refusedKey is the refusal of a token under a kid whose only key the set left out as too short,
// or nil: a token under it is not worth a fetch of the keys.
func (s *keySet) refusedKey(kid, alg string) error {
	bits, ok := s.short[kid]
	if !ok {
		return nil
	}
	if _, usable := s.find(kid, alg); usable {
		return nil
	}
	return refuse(fmt.Sprintf("the token's signing key is an RSA key shorter than %d bits, which this service does not trust", minRSABits),
		fmt.Errorf("kid %q: %d bits", kid, bits))
}

// refresh fetches the keys, or waits for the fetch under way; it fetches nothing when the last
// fetch began less than refetchInterval ago. It returns ctx's error if ctx ends first (the fetch
// goes on); what the fetch found is lastError's.
func (c *keyCache) refresh(ctx context.Context) error {
	done := c.fetches.DoChan("keys", func() (any, error) {
		if c.due() {
			c.fetch()
		}
		return nil, nil
	})
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// due tells whether a fetch may begin now, and if so counts it as begun.
func (c *keyCache) due() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if !c.lastStart.IsZero() && now.Sub(c.lastStart) < refetchInterval {
		return false
	}
	c.lastStart = now
	return true
}

// lastError is what the last fetch failed with, or nil.
func (c *keyCache) lastError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastErr
}

// untilDue is how long until the keys should be fetched again: at half their trusted time, and
// no sooner than refetchInterval after the last fetch began.
func (c *keyCache) untilDue(now time.Time) time.Duration {
	c.mu.Lock()
	due := c.lastStart.Add(refetchInterval)
	c.mu.Unlock()
	if s := c.set.Load(); s != nil {
		if half := s.fetched.Add(c.maxAge / 2); half.After(due) {
			due = half
		}
	}
	return max(due.Sub(now), 0)
}

// fetch reads the discovery document (until one was read) and the key set, on its own deadline:
// the request that asked for it may give up without cutting it short for the others.
func (c *keyCache) fetch() {
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	c.mu.Lock()
	jwksURI := c.jwksURI
	c.mu.Unlock()
	var err error
	if jwksURI == "" {
		jwksURI, err = c.discover(ctx)
	}
	var s *keySet
	if err == nil {
		s, err = c.fetchKeys(ctx, jwksURI)
	}
	c.mu.Lock()
	if err == nil {
		c.jwksURI = jwksURI
	}
	c.lastErr = err
	c.mu.Unlock()
	if err != nil {
		c.log.Error("identity provider: keys not fetched; tokens are refused once the keys in hand are older than their trusted time",
			slog.String("issuer", c.issuer), slog.String("error", err.Error()), slog.Duration("trusted_for", c.maxAge))
	} else {
		c.replace(s)
	}
}

// replace makes s the current key set, and logs what changed.
func (c *keyCache) replace(s *keySet) {
	old := c.set.Swap(s)
	kids := slices.Sorted(maps.Keys(s.byKid))
	if old != nil && slices.Equal(kids, slices.Sorted(maps.Keys(old.byKid))) {
		c.log.Debug("identity provider: keys fetched", slog.Any("kids", kids))
		return
	}
	c.log.Info("identity provider: keys fetched", slog.String("issuer", c.issuer), slog.Any("kids", kids))
}

// discoveryURLs are where the issuer's metadata may be: OpenID Connect Discovery's
// issuer/.well-known/openid-configuration, then RFC 8414's well-known name inserted between the
// host and the issuer's path. A terminating "/" of the path is removed first (both say so).
func discoveryURLs(issuer string) []string {
	u, _ := url.Parse(issuer) // checked in New
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	origin := u.Scheme + "://" + u.Host
	return []string{
		origin + path + "/.well-known/openid-configuration",
		origin + "/.well-known/oauth-authorization-server" + path,
	}
}

// discover reads the issuer's metadata and returns its jwks_uri. The document must name the
// configured issuer exactly: anything else means the configuration names another provider.
func (c *keyCache) discover(ctx context.Context) (string, error) {
	var errs []error
	for _, u := range discoveryURLs(c.issuer) {
		var doc struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		err := c.getJSON(ctx, u, &doc)
		if errors.Is(err, errNotThere) {
			errs = append(errs, err)
			continue
		}
		if err != nil {
			return "", err
		}
		if doc.Issuer != c.issuer {
			return "", fmt.Errorf("discovery document %s names issuer %q, not %q as configured (the two must be equal, trailing slash included)", u, doc.Issuer, c.issuer)
		}
		ju, perr := url.Parse(doc.JWKSURI)
		if perr != nil || ju.Scheme != "https" || ju.Host == "" {
			return "", fmt.Errorf("discovery document %s: jwks_uri %q is not an https URL", u, doc.JWKSURI)
		}
		return doc.JWKSURI, nil
	}
	return "", fmt.Errorf("no discovery document for issuer %q: %w", c.issuer, errors.Join(errs...))
}

// errNotHTTPS is a redirect away from https, which is refused: the documents' integrity is the
// TLS connection's.
var errNotHTTPS = errors.New("not https")

// errNotThere is a document URL the provider answers 404 (or 410) for.
var errNotThere = errors.New("not found")

// getJSON fetches an https URL and decodes its JSON body, of at most maxDocument bytes. A network
// failure or a 5xx wraps ErrUnreachable.
func (c *keyCache) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	res, err := c.client.Do(req)
	var untrusted *tls.CertificateVerificationError
	var notTLS tls.RecordHeaderError
	switch {
	case errors.Is(err, errNotHTTPS):
		return fmt.Errorf("%s: %w", u, err) // the provider's answer, not its absence
	case errors.As(err, &untrusted):
		return fmt.Errorf("%s: the provider's certificate is not trusted (for a private CA, give its certificate in SSL_CERT_FILE): %w", u, err)
	case errors.Is(err, http.ErrSchemeMismatch) || errors.As(err, &notTLS):
		// A server answered, in something other than TLS: not an outage, the URL is wrong.
		return fmt.Errorf("%s: the server there speaks plain HTTP, not TLS: serve the provider over https at that URL, or correct the URL: %w", u, err)
	}
	if err != nil {
		return fmt.Errorf("%s: %w: %w", u, ErrUnreachable, err)
	}
	defer res.Body.Close()
	switch {
	case res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusGone:
		return fmt.Errorf("%s: %s: %w", u, res.Status, errNotThere)
	case res.StatusCode >= 500:
		return fmt.Errorf("%s: %s: %w", u, res.Status, ErrUnreachable)
	case res.StatusCode != http.StatusOK:
		return fmt.Errorf("%s: %s", u, res.Status)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxDocument+1))
	if err != nil {
		return fmt.Errorf("%s: %w: %w", u, ErrUnreachable, err)
	}
	if len(body) > maxDocument {
		return fmt.Errorf("%s: larger than %d bytes", u, maxDocument)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: not a JSON document of the expected shape: %w", u, err)
	}
	return nil
}

// fetchKeys reads the key set at jwksURI (RFC 7517 section 5). Only public signing keys with a
// kid are kept; a key this package cannot read (an unknown kty or curve, say) is left out rather
// than failing the set, so that a provider's new kind of key does not lock out the others.
func (c *keyCache) fetchKeys(ctx context.Context, jwksURI string) (*keySet, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := c.getJSON(ctx, jwksURI, &doc); err != nil {
		return nil, err
	}
	s := &keySet{byKid: map[string][]signingKey{}, short: map[string]int{}, fetched: c.now()}
	old := c.set.Load()
	for i, raw := range doc.Keys {
		k, why := signingKeyOf(raw)
		if rk, ok := k.jwk.Key.(*rsa.PublicKey); ok && why == "" && rk.N.BitLen() < minRSABits {
			s.short[k.jwk.KeyID] = rk.N.BitLen()
			if _, known := old.shortKey(k.jwk.KeyID); !known {
				c.log.Warn(fmt.Sprintf("identity provider: key left out: an RSA key shorter than %d bits (RFC 7518 section 3.3); tokens it signs are refused", minRSABits),
					slog.String("issuer", c.issuer), slog.String("kid", k.jwk.KeyID), slog.Int("bits", rk.N.BitLen()))
			}
			continue
		}
		if why != "" {
			c.log.Debug("identity provider: key left out", slog.Int("index", i), slog.String("why", why))
			continue
		}
		s.byKid[k.jwk.KeyID] = append(s.byKid[k.jwk.KeyID], k)
	}
	return s, nil
}

// shortKey reports whether the set left out a short RSA key under kid; s may be nil.
func (s *keySet) shortKey(kid string) (int, bool) {
	if s == nil {
		return 0, false
	}
	bits, ok := s.short[kid]
	return bits, ok
}

// signingKeyOf reads one key of a set, or says why it is no signing key of ours.
func signingKeyOf(raw json.RawMessage) (signingKey, string) {
	var k jose.JSONWebKey
	if err := k.UnmarshalJSON(raw); err != nil {
		return signingKey{}, err.Error()
	}
	switch {
	case k.KeyID == "":
		return signingKey{}, "no kid"
	case k.Use != "" && k.Use != "sig":
		return signingKey{}, "use is " + k.Use
	case !k.IsPublic():
		// A symmetric key, or a private one: neither belongs in a published key set.
		return signingKey{}, "not a public key"
	}
	tp, err := k.Thumbprint(crypto.SHA256)
	if err != nil {
		return signingKey{}, err.Error()
	}
	return signingKey{jwk: k, thumbprint: base64.RawURLEncoding.EncodeToString(tp)}, ""
}
