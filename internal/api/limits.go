package api

import (
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"backoffice/internal/auth"
	"backoffice/internal/ratelimit"
)

// Limits bounds what one caller can ask of the service. The zero value limits nothing; the
// command sets the defaults documented in docs/operations-guide.md.
type Limits struct {
	// Rate is the requests per second each credential may make on average, Burst how many it may
	// make at once (a token bucket keyed by the credential's hash). Rate 0: no limit.
	Rate  float64
	Burst int
	// FailureRate is the failed authentications per second each client address may make on
	// average, FailureBurst how many at once. Past it the address is locked: every attempt from it
	// is answered 429, valid or not, unless its credential has succeeded from that address before
	// (see ratelimit.Known). FailureRate 0: no limit.
	FailureRate  float64
	FailureBurst int
	// ClientAddrHeader names the header a trusted load balancer puts the client's address in
	// (e.g. X-Forwarded-For; the last address in it is used). Empty: the connection's address.
	ClientAddrHeader string
	// Now is the limiters' clock; nil means time.Now.
	Now func() time.Time
}

// guard holds the limiters; a nil limiter limits nothing.
type guard struct {
	credentials *ratelimit.Limiter
	failures    *ratelimit.Limiter
	// known holds, per address, the credentials that succeeded from it: the only ones let past
	// the address's lock. Set with failures.
	known      *ratelimit.Known
	addrHeader string
	// The RateLimit-Policy field of each limiter, made once.
	credentialPolicy, failurePolicy policy
}

// The names of the quota policies in the RateLimit fields.
const (
	credentialPolicyName = "credential"
	failurePolicyName    = "failed-auth"
)

// policy is one limiter's RateLimit-Policy field value and its name.
type policy struct {
	name, field string
}

func newPolicy(name string, l *ratelimit.Limiter) policy {
	p := l.Policy()
	return policy{name: name, field: fmt.Sprintf("%q;q=%d;w=%d", name, p.Quota, p.Window)}
}

func newGuard(l Limits) *guard {
	g := &guard{addrHeader: http.CanonicalHeaderKey(l.ClientAddrHeader)}
	if l.Rate > 0 {
		g.credentials = ratelimit.New(l.Rate, l.Burst, 0, l.Now)
		g.credentialPolicy = newPolicy(credentialPolicyName, g.credentials)
	}
	if l.FailureRate > 0 {
		g.failures = ratelimit.New(l.FailureRate, l.FailureBurst, 0, l.Now)
		g.failurePolicy = newPolicy(failurePolicyName, g.failures)
		g.known = ratelimit.NewKnown(0, 0)
	}
	return g
}

// failedAuthDetail is the 429 of a locked address, to a wrong credential and a right one alike.
const failedAuthDetail = "too many failed authentication attempts from this address"

// lockedOut tells whether the attempt meets its address's lock: the address has no failure
// left, and the attempt's credential has not succeeded from it before. Valid or not, such an
// attempt gets the one answer a wrong one gets, without a lookup: a locked address learns nothing,
// however fast it guesses, while a client known there keeps working (OWASP's device cookie).
func (g *guard) lockedOut(addr string, at auth.Attempt) (ratelimit.Decision, bool) {
	d := g.failures.Check(addr)
	if d.Allowed || at.Valid() && g.known.Has(addr, string(at.Hash)) {
		return d, false
	}
	return d, true
}

// clientAddr is the key of a client address: the address itself, or for IPv6 its /64 (one
// host usually holds a whole /64, so single addresses would be free for the taking).
func (g *guard) clientAddr(r *http.Request) string {
	if g.addrHeader != "" {
		if vs := r.Header.Values(g.addrHeader); len(vs) > 0 {
			// The last hop is the one our own load balancer added; earlier ones are the client's say.
			last := vs[len(vs)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			if a, err := netip.ParseAddr(strings.TrimSpace(last)); err == nil {
				return addrKey(a)
			}
		}
	}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return addrKey(ap.Addr())
	}
	return r.RemoteAddr
}

func addrKey(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// The RateLimit fields' names in the header map, canonical as Header.Set stores them. The map is
// written directly: Set would canonicalize these names (not canonical as the draft spells them)
// into a new string on every request.
var (
	rateLimitKey       = http.CanonicalHeaderKey("RateLimit")
	rateLimitPolicyKey = http.CanonicalHeaderKey("RateLimit-Policy")
)

// rateLimited answers 429 rate_limited with when to come back. The RateLimit field's window is
// the same wait: no request will succeed within it (draft-ietf-httpapi-ratelimit-headers: a
// Retry-After must not end before the effective window does).
func rateLimited(w http.ResponseWriter, p policy, d ratelimit.Decision, detail string) {
	h := w.Header()
	secs := max(wholeSeconds(d.RetryAfter), 1)
	h[rateLimitPolicyKey] = []string{p.field}
	h[rateLimitKey] = []string{rateLimitField(p.name, 0, secs)}
	h.Set("Retry-After", strconv.FormatInt(secs, 10))
	writeErrorBody(w, http.StatusTooManyRequests, "rate_limited", detail+"; retry after "+h.Get("Retry-After")+" s")
}

// setRateHeaders tells the caller its quota and what is left of it, in the structured fields of
// draft-ietf-httpapi-ratelimit-headers: RateLimit-Policy "credential";q=100;w=2 (q requests per
// w seconds) and RateLimit "credential";r=57;t=1 (r requests can be made now; in t seconds,
// unspent, the whole quota is back).
func setRateHeaders(h http.Header, p policy, d ratelimit.Decision) {
	h[rateLimitPolicyKey] = []string{p.field}
	h[rateLimitKey] = []string{rateLimitField(p.name, d.Remaining, wholeSeconds(d.Full))}
}

func rateLimitField(name string, remaining int, reset int64) string {
	b := make([]byte, 0, 48)
	b = strconv.AppendQuote(b, name)
	b = append(b, ";r="...)
	b = strconv.AppendInt(b, int64(remaining), 10)
	b = append(b, ";t="...)
	b = strconv.AppendInt(b, reset, 10)
	return string(b)
}

// wholeSeconds rounds up: a client told to wait must not come back early.
func wholeSeconds(d time.Duration) int64 {
	return int64(math.Ceil(d.Seconds()))
}
