package api

import (
	"net/http"
	"slices"
	"strings"
)

// cors lets pages of the configured origins call the operations from a browser (CORS, as the
// Fetch standard defines it). Origins are compared exactly, as browsers send them
// (scheme://host[:port], lower case, no default port); a request from any other origin gets no
// CORS header at all, so the browser keeps the answer from the page. No cookie or browser
// credential is involved (callers send Authorization themselves), hence no Allow-Credentials.
type cors struct {
	origins []string        // empty: CORS off
	routes  map[string]bool // the patterns a page may call
}

const (
	// corsAllowHeaders are the request headers a page may send beyond the CORS-safelisted ones:
	// the credential, the push's idempotency key, a JSON content type that fetch wrappers add,
	// and the trace context the service continues.
	corsAllowHeaders = "Authorization, Idempotency-Key, Content-Type, traceparent, tracestate"
	// corsExposeHeaders are the response headers a page may read beyond the safelisted ones.
	corsExposeHeaders = "RateLimit, RateLimit-Policy, Retry-After, Idempotent-Replayed, X-Request-Id"
	// corsMaxAge lets a browser reuse a preflight's answer for ten minutes.
	corsMaxAge = "600"
)

func newCORS(origins []string) *cors { return &cors{origins: origins, routes: map[string]bool{}} }

func (c *cors) on() bool { return len(c.origins) > 0 }

// allowed is the request's Origin when it is one of the configured origins, else "".
func (c *cors) allowed(r *http.Request) string {
	o := r.Header.Values("Origin")
	if len(o) == 1 && slices.Contains(c.origins, o[0]) {
		return o[0]
	}
	return ""
}

// route registers h at pattern ("METHOD /path") as an operation a page may call.
func (c *cors) route(mux *http.ServeMux, pattern string, h http.Handler) {
	c.routes[pattern] = true
	if c.on() {
		h = c.actual(h)
	}
	mux.Handle(pattern, h)
}

// actual marks an operation's answer as readable by the caller's page when its origin is
// allowed. Every answer says it depends on Origin, so that a cache never hands one origin's
// answer to another.
func (c *cors) actual(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Add("Vary", "Origin")
		if o := c.allowed(r); o != "" {
			h.Set("Access-Control-Allow-Origin", o)
			h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		}
		next.ServeHTTP(w, r)
	})
}

// preflight answers a browser's preflight (OPTIONS with Origin and Access-Control-Request-Method)
// from an allowed origin for a method and path that name an operation of route: 204 with what
// a page may send. It reports whether it answered; anything else sent with OPTIONS is answered as
// it always was (405, no CORS header), and the browser refuses the call.
func (c *cors) preflight(w http.ResponseWriter, r *http.Request, mux *http.ServeMux) bool {
	if !c.on() || r.Method != http.MethodOptions {
		return false
	}
	w.Header().Add("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers")
	o, method := c.allowed(r), r.Header.Get("Access-Control-Request-Method")
	if o == "" || method == "" {
		return false
	}
	probe := r.Clone(r.Context())
	probe.Method = method
	_, pattern := mux.Handler(probe)
	if !c.routes[pattern] {
		return false
	}
	routeMethod, routePath, _ := strings.Cut(pattern, " ")
	// The access log and the metrics name the preflight by its route, as the mux would.
	r.Pattern = http.MethodOptions + " " + routePath
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", o)
	h.Set("Access-Control-Allow-Methods", routeMethod)
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Access-Control-Max-Age", corsMaxAge)
	w.WriteHeader(http.StatusNoContent)
	return true
}
