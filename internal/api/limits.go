package api

import (
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

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
	// average, FailureBurst how many at once. Past it, the address is answered 429 before its
	// credential is looked up, so keys cannot be guessed at speed. FailureRate 0: no limit.
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
	addrHeader  string
}

func newGuard(l Limits) *guard {
	g := &guard{addrHeader: http.CanonicalHeaderKey(l.ClientAddrHeader)}
	if l.Rate > 0 {
		g.credentials = ratelimit.New(l.Rate, l.Burst, 0, l.Now)
	}
	if l.FailureRate > 0 {
		g.failures = ratelimit.New(l.FailureRate, l.FailureBurst, 0, l.Now)
	}
	return g
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

// rateLimited answers 429 rate_limited with when to come back.
func rateLimited(w http.ResponseWriter, d ratelimit.Decision, detail string) {
	h := w.Header()
	setRateHeaders(h, d)
	secs := int64(math.Ceil(d.RetryAfter.Seconds()))
	h.Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
	writeErrorBody(w, http.StatusTooManyRequests, "rate_limited", detail+"; retry after "+h.Get("Retry-After")+" s")
}

// setRateHeaders tells the caller its budget (draft-ietf-httpapi-ratelimit-headers).
func setRateHeaders(h http.Header, d ratelimit.Decision) {
	h.Set("RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("RateLimit-Remaining", strconv.Itoa(d.Remaining))
}
