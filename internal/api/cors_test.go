package api_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"backoffice/internal/api"
	"backoffice/internal/push"
)

const (
	crmOrigin   = "https://crm.example.com"
	otherOrigin = "https://evil.example.com"
)

// preflight is what a browser sends before a call that is not "simple". Its answer is validated
// against the document, which declares the preflights.
func preflight(t *testing.T, h http.Handler, origin, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodOptions, path, nil)
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if method != "" {
		req.Header.Set("Access-Control-Request-Method", method)
	}
	req.Header.Set("Access-Control-Request-Headers", "authorization,idempotency-key")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	validate(t, req, recorded(req, rec))
	return rec
}

// corsHeaders are the response's Access-Control-* headers.
func corsHeaders(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		if strings.HasPrefix(k, "Access-Control-") {
			out[k] = v
		}
	}
	return out
}

func varies(h http.Header, name string) bool {
	for _, v := range h.Values("Vary") {
		for _, f := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), name) {
				return true
			}
		}
	}
	return false
}

func TestCORSPreflight(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		h.withDeps(t, func(d *api.Deps) { d.CORSOrigins = []string{"http://localhost:3000", crmOrigin} })
		for _, op := range operations() {
			rec := preflight(t, h.handler, crmOrigin, op.method, op.path)
			if rec.Code != http.StatusNoContent || rec.Body.Len() != 0 {
				t.Errorf("preflight of %s %s: %d %s", op.method, op.path, rec.Code, rec.Body)
			}
			want := http.Header{
				"Access-Control-Allow-Origin":  {crmOrigin},
				"Access-Control-Allow-Methods": {op.method},
				"Access-Control-Allow-Headers": {"Authorization, Idempotency-Key, Content-Type, traceparent, tracestate"},
				"Access-Control-Max-Age":       {"600"},
			}
			if got := corsHeaders(rec.Header()); !headersEqual(got, want) {
				t.Errorf("preflight of %s %s: %v, want %v", op.method, op.path, got, want)
			}
			if !varies(rec.Header(), "Origin") {
				t.Errorf("preflight of %s %s: no Vary: Origin", op.method, op.path)
			}
		}
		if !strings.Contains(h.logs.String(), `"route":"OPTIONS /v1/audit-events"`) {
			t.Errorf("the access log does not name the preflight by its route:\n%s", h.logs)
		}
		// Everything else with OPTIONS is answered as before CORS: 405, no CORS header.
		refused := []struct{ name, origin, method, path string }{
			{"an origin not listed", otherOrigin, http.MethodGet, samPath(leadA.String())},
			{"an origin differing in case", "https://CRM.example.com", http.MethodGet, samPath(leadA.String())},
			{"no Origin", "", http.MethodGet, samPath(leadA.String())},
			{"no requested method", crmOrigin, "", samPath(leadA.String())},
			{"a method the path does not take", crmOrigin, http.MethodPut, samPath(leadA.String())},
			{"decrypt's refused methods", crmOrigin, http.MethodPost, decryptPath(leadA, principalA, "ssn")},
			{"a route that is not an operation", crmOrigin, http.MethodGet, "/openapi.yaml"},
			{"no route", crmOrigin, http.MethodGet, "/v1/nothing"},
		}
		// Two Origin headers name no one origin: a proxy and the service could disagree.
		req := httptest.NewRequest(http.MethodOptions, samPath(leadA.String()), nil)
		req.Header["Origin"] = []string{crmOrigin, crmOrigin}
		req.Header.Set("Access-Control-Request-Method", http.MethodGet)
		rec := httptest.NewRecorder()
		h.handler.ServeHTTP(rec, req)
		if len(corsHeaders(rec.Header())) != 0 {
			t.Errorf("two Origin headers: %d %v, want no CORS answer", rec.Code, rec.Header())
		}
		for _, c := range refused {
			rec := preflight(t, h.handler, c.origin, c.method, c.path)
			if rec.Code == http.StatusNoContent || len(corsHeaders(rec.Header())) != 0 {
				t.Errorf("%s: %d %v, want no CORS answer", c.name, rec.Code, corsHeaders(rec.Header()))
			}
			validate(t, httptest.NewRequest(http.MethodOptions, c.path, nil), response{rec.Code, rec.Header(), rec.Body.Bytes()})
		}
	})
}

func headersEqual(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\n") != strings.Join(b[k], "\n") {
			return false
		}
	}
	return true
}

// An answer to an allowed origin says so, and which headers its page may read; an answer to any
// other origin carries no CORS header. Every answer varies by Origin, errors included.
func TestCORSActualResponses(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		h.withDeps(t, func(d *api.Deps) { d.CORSOrigins = []string{crmOrigin} })
		call := func(origin, key string) response {
			req := httptest.NewRequest(http.MethodGet, samPath(leadA.String()), nil)
			req.Header.Set("Origin", origin)
			if key != "" {
				req.Header.Set("Authorization", "Api-Key "+key)
			}
			return h.send(req)
		}
		for _, key := range []string{staffKey, ""} {
			r := call(crmOrigin, key)
			want := http.Header{
				"Access-Control-Allow-Origin":   {crmOrigin},
				"Access-Control-Expose-Headers": {"RateLimit, RateLimit-Policy, Retry-After, Idempotent-Replayed, X-Request-Id"},
			}
			if got := corsHeaders(r.Header); !headersEqual(got, want) || !varies(r.Header, "Origin") {
				t.Errorf("allowed origin, key %q: %d %v, want %v and Vary: Origin", key, r.Status, r.Header, want)
			}
			r = call(otherOrigin, key)
			if len(corsHeaders(r.Header)) != 0 || !varies(r.Header, "Origin") {
				t.Errorf("other origin, key %q: %v, want no CORS header and Vary: Origin", key, r.Header)
			}
		}
	})
}

// Off by default: no preflight is answered and no answer carries a CORS header.
func TestCORSOffByDefault(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		rec := preflight(t, h.handler, crmOrigin, http.MethodGet, samPath(leadA.String()))
		if rec.Code != http.StatusMethodNotAllowed || len(corsHeaders(rec.Header())) != 0 {
			t.Errorf("preflight: %d %v", rec.Code, rec.Header())
		}
		req := httptest.NewRequest(http.MethodGet, samPath(leadA.String()), nil)
		req.Header.Set("Origin", crmOrigin)
		req.Header.Set("Authorization", "Api-Key "+staffKey)
		if r := h.send(req); r.Status != http.StatusOK || len(corsHeaders(r.Header)) != 0 {
			t.Errorf("call: %d %v", r.Status, r.Header)
		}
	})
}

// With the rate limit and CORS both on, every answer carries every header it can, and each is one
// the document declares for that answer (validate checks): each operation's success, its refusals
// after authentication (403, 404, a push's 409 and 502), a 401 (no RateLimit: no credential was
// proven), and the HEADs.
func TestEveryHeaderSentIsDeclared(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		h.withDeps(t, func(d *api.Deps) {
			d.Limits = api.Limits{Rate: 1000, Burst: 1000, Now: func() time.Time { return fixtureNow }}
			d.CORSOrigins = []string{crmOrigin}
			d.Pusher = push.New(push.Config{Store: h.st, Logger: slog.New(slog.DiscardHandler)}) // no gateway: 502
		})
		call := func(method, path, key string) response {
			req := httptest.NewRequest(method, path, nil)
			req.Header.Set("Origin", crmOrigin)
			if key != "" {
				req.Header.Set("Authorization", "Api-Key "+key)
			}
			return h.send(req)
		}
		ops := append(operations(), struct{ method, path string }{http.MethodPost, pushPath(orderA, itemCanceled)})
		for _, op := range ops {
			for _, key := range []string{staffKey, noPermKey, partnerBKey} {
				r := call(op.method, op.path, key)
				if r.Header.Get("RateLimit") == "" || r.Header.Get("Access-Control-Allow-Origin") != crmOrigin {
					t.Errorf("%s %s as %s -> %d: headers %v", op.method, op.path, key, r.Status, r.Header)
				}
			}
			if r := call(op.method, op.path, ""); r.Status != http.StatusUnauthorized || r.Header.Get("RateLimit") != "" {
				t.Errorf("%s %s without a credential -> %d: headers %v", op.method, op.path, r.Status, r.Header)
			}
			if op.method == http.MethodGet && !strings.Contains(op.path, "/decrypt/") {
				if r := call(http.MethodHead, op.path, staffKey); r.Status != http.StatusOK || r.Header.Get("RateLimit") == "" {
					t.Errorf("HEAD %s -> %d: headers %v", op.path, r.Status, r.Header)
				}
			}
		}
	})
}
