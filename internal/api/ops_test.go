package api_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"backoffice/internal/api"
	"backoffice/internal/domain"
	"backoffice/internal/push"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// countingStore counts credential lookups, to prove a limited caller never reaches the store.
type countingStore struct {
	*store.Store
	mu      sync.Mutex
	lookups int
}

func (c *countingStore) Credential(ctx context.Context, kind string, hash []byte) (domain.Credential, error) {
	c.mu.Lock()
	c.lookups++
	c.mu.Unlock()
	return c.Store.Credential(ctx, kind, hash)
}

func (c *countingStore) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lookups
}

// recordingObserver remembers what the handler measured.
type recordingObserver struct {
	mu       sync.Mutex
	requests []string
	decrypts []string
}

func (o *recordingObserver) ObserveRequest(method, route string, status int, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests = append(o.requests, method+" "+route+" "+http.StatusText(status))
}

func (o *recordingObserver) ObserveDecrypt(outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.decrypts = append(o.decrypts, outcome)
}

// withDeps rebuilds the harness's handler with changed dependencies.
func (h *harness) withDeps(t *testing.T, change func(d *api.Deps)) {
	t.Helper()
	d := api.Deps{Store: h.st, Ring: testdb.Ring(t), Logger: slog.New(slog.NewJSONHandler(h.logs, nil)), Now: func() time.Time { return fixtureNow }}
	change(&d)
	h.handler = api.New(d)
}

// send serves req and validates the answer against openapi.yaml.
func (h *harness) send(req *http.Request) response {
	h.t.Helper()
	rec := httptest.NewRecorder()
	h.handler.ServeHTTP(rec, req)
	res := recorded(req, rec)
	validate(h.t, req, res)
	return res
}

func TestHealth(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		for path, want := range map[string]string{"/healthz": `{"status":"ok"}`, "/readyz": `{"status":"ready"}`} {
			r := h.do(http.MethodGet, path, "") // no credential needed
			if r.Status != http.StatusOK || strings.TrimSpace(string(r.Body)) != want {
				t.Errorf("%s: %d %s", path, r.Status, r.Body)
			}
		}
		wantError(t, h.do(http.MethodPost, "/readyz", ""), http.StatusMethodNotAllowed, "method_not_allowed")
	})
}

// fakeWitnesses are witnesses final up to a size, behind the newest checkpoint.
type fakeWitnesses struct{ checkpoint, final int64 }

func (f fakeWitnesses) WitnessStatus() (int64, int64) { return f.checkpoint, f.final }

// With witnesses configured, /readyz says how far behind their cosignatures are, and stays ready
// while they lag: the answer is validated against the document by the harness.
func TestReadyzShowsWitnessLag(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		h.withDeps(t, func(d *api.Deps) { d.Witnesses = fakeWitnesses{checkpoint: 120, final: 90} })
		r := h.do(http.MethodGet, "/readyz", "")
		if want := `{"status":"ready","auditWitnesses":{"checkpointSize":120,"finalSize":90}}`; r.Status != http.StatusOK || strings.TrimSpace(string(r.Body)) != want {
			t.Errorf("readyz: %d %s; want 200 %s", r.Status, r.Body, want)
		}
	})
}

// fakeHealth is a database in a given state.
type fakeHealth struct {
	pingErr    error
	pending    int
	pendingErr error
	writeErr   error
	trailErr   error
}

func (f fakeHealth) Ping(context.Context) error           { return f.pingErr }
func (f fakeHealth) Pending(context.Context) (int, error) { return f.pending, f.pendingErr }
func (f fakeHealth) Writable(context.Context) error       { return f.writeErr }
func (f fakeHealth) TrailCatalogHeld() error              { return f.trailErr }

func TestNotReady(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		secret := errors.New("dial tcp 10.0.0.5:5432: password authentication failed for user backoffice")
		for name, hs := range map[string]fakeHealth{
			"database down":       {pingErr: secret},
			"migrations pending":  {pending: 2},
			"schema unreadable":   {pendingErr: secret},
			"not writable":        {writeErr: secret},
			"trail held":          {trailErr: errors.New("the audit trail's tables are not what the migrations made: found: trigger zz on audit_events")},
			"ready (for control)": {},
		} {
			h.withDeps(t, func(d *api.Deps) { d.Health = hs })
			r := h.do(http.MethodGet, "/readyz", "")
			if hs == (fakeHealth{}) {
				if r.Status != http.StatusOK {
					t.Errorf("%s: %d %s", name, r.Status, r.Body)
				}
				continue
			}
			wantError(t, r, http.StatusServiceUnavailable, "not_ready")
			if strings.Contains(string(r.Body), "password") || strings.Contains(string(r.Body), "zz") {
				t.Errorf("%s: the cause leaked: %s", name, r.Body)
			}
			// Liveness does not depend on the database.
			if r := h.do(http.MethodGet, "/healthz", ""); r.Status != http.StatusOK {
				t.Errorf("%s: healthz %d", name, r.Status)
			}
		}
	})
}

func TestBodyLimit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		for _, op := range operations() {
			// Declared too large: refused before anything is read.
			req := httptest.NewRequest(op.method, op.path, strings.NewReader("x"))
			req.ContentLength = 1<<20 + 1
			req.Header.Set("Authorization", "Api-Key "+staffKey)
			wantError(t, h.send(req), http.StatusRequestEntityTooLarge, "payload_too_large")

			// Chunked (no declared length) and too large.
			req = httptest.NewRequest(op.method, op.path, io.LimitReader(zeros{}, 1<<20+10))
			req.ContentLength = -1
			req.Header.Set("Authorization", "Api-Key "+staffKey)
			wantError(t, h.send(req), http.StatusRequestEntityTooLarge, "payload_too_large")
		}
		// A small chunked body is no problem (and is ignored).
		req := httptest.NewRequest(http.MethodGet, "/v1/crm/leads/"+leadA.String()+"/service-acceptance", io.LimitReader(zeros{}, 100))
		req.ContentLength = -1
		req.Header.Set("Authorization", "Api-Key "+staffKey)
		if r := h.send(req); r.Status != http.StatusOK {
			t.Errorf("small chunked body: %d %s", r.Status, r.Body)
		}
		// Nothing was deleted or pushed by the refused requests.
		if r := h.do(http.MethodDelete, "/v1/crm/merchants/"+merchantA.String()+"/documents/"+docA1.String(), "Api-Key "+staffKey); r.Status != http.StatusNoContent {
			t.Errorf("document gone after a refused delete: %d", r.Status)
		}
	})
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestHeaderLimit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		req := httptest.NewRequest(http.MethodGet, "/v1/crm/leads/"+leadA.String()+"/service-acceptance", nil)
		req.Header.Set("Authorization", "Api-Key "+staffKey)
		req.Header.Set("X-Padding", strings.Repeat("p", 40<<10))
		wantError(t, h.send(req), http.StatusRequestHeaderFieldsTooLarge, "header_too_large")
	})
}

func TestCredentialRateLimit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		cs := &countingStore{Store: h.st}
		h.withDeps(t, func(d *api.Deps) {
			d.Store = cs
			// 1 per second, burst 3, on a clock that stands still.
			d.Limits = api.Limits{Rate: 1, Burst: 3, Now: func() time.Time { return fixtureNow }}
		})
		path := "/v1/crm/leads/" + leadA.String() + "/service-acceptance"
		for i, want := range []string{`"credential";r=2;t=1`, `"credential";r=1;t=2`, `"credential";r=0;t=3`} {
			r := h.get(path, staffKey)
			if r.Status != http.StatusOK || r.Header.Get("RateLimit-Policy") != `"credential";q=3;w=3` || r.Header.Get("RateLimit") != want {
				t.Fatalf("request %d: %d, RateLimit-Policy %q RateLimit %q, want %q", i+1, r.Status, r.Header.Get("RateLimit-Policy"), r.Header.Get("RateLimit"), want)
			}
		}
		before := cs.count()
		r := h.get(path, staffKey)
		wantError(t, r, http.StatusTooManyRequests, "rate_limited")
		if r.Header.Get("Retry-After") != "1" || r.Header.Get("RateLimit") != `"credential";r=0;t=1` || r.Header.Get("RateLimit-Policy") != `"credential";q=3;w=3` {
			t.Errorf("429 headers: %v", r.Header)
		}
		if cs.count() != before {
			t.Errorf("a credential known to be over its rate was looked up")
		}
		// Another credential has its own budget; every operation is limited alike.
		if r := h.get(path, partnerAKey); r.Status != http.StatusOK {
			t.Errorf("another key: %d", r.Status)
		}
		wantError(t, h.get(samPath(leadA.String()), staffKey), http.StatusTooManyRequests, "rate_limited")
	})
}

// The RateLimit fields state the default token bucket (50 per second, burst 100) truthfully: the
// whole burst is 100 requests per 2 s; r is what can be sent now, t when all of it is back.
func TestRateLimitFieldsOfTheDefaultBucket(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		now := fixtureNow
		h.withDeps(t, func(d *api.Deps) {
			d.Limits = api.Limits{Rate: 50, Burst: 100, Now: func() time.Time { return now }}
		})
		path := "/v1/crm/leads/" + leadA.String() + "/service-acceptance"
		var r response
		for range 43 {
			r = h.get(path, staffKey)
		}
		if got := r.Header.Get("RateLimit-Policy"); got != `"credential";q=100;w=2` {
			t.Errorf("RateLimit-Policy %q", got)
		}
		if got := r.Header.Get("RateLimit"); got != `"credential";r=57;t=1` {
			t.Errorf("after 43 requests: RateLimit %q", got)
		}
		now = now.Add(860 * time.Millisecond) // 43 tokens back: full again
		if got := h.get(path, staffKey).Header.Get("RateLimit"); got != `"credential";r=99;t=1` {
			t.Errorf("860 ms later: RateLimit %q", got)
		}
		// Errors after authentication carry the fields too.
		if got := h.get("/v1/crm/leads/"+id(999).String()+"/service-acceptance", staffKey).Header.Get("RateLimit"); got != `"credential";r=98;t=1` {
			t.Errorf("404: RateLimit %q", got)
		}
	})
}

func TestFailedAuthenticationLimit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		h.withDeps(t, func(d *api.Deps) {
			d.Limits = api.Limits{FailureRate: 0.0001, FailureBurst: 5, ClientAddrHeader: "X-Forwarded-For"}
		})
		path := "/v1/crm/leads/" + leadA.String() + "/service-acceptance"
		guess := func(from string, key string) response {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.Header.Set("Authorization", "Api-Key "+key)
			if from != "" {
				req.Header.Set("X-Forwarded-For", from)
			}
			return h.send(req)
		}
		// Successes cost nothing.
		for range 10 {
			if r := guess("203.0.113.7", staffKey); r.Status != http.StatusOK {
				t.Fatalf("valid key: %d %s", r.Status, r.Body)
			}
		}
		for i := range 5 {
			wantError(t, guess("198.51.100.1, 203.0.113.7", "guess-"+string(rune('a'+i))), http.StatusUnauthorized, "unauthenticated")
		}
		r := guess("203.0.113.7", "guess-f")
		wantError(t, r, http.StatusTooManyRequests, "rate_limited")
		// 5 failures per 10^4 s: the window is 5*10^4 s, and the next failure is allowed in 10^4 s.
		if r.Header.Get("Retry-After") != "10000" || r.Header.Get("RateLimit-Policy") != `"failed-auth";q=5;w=50000` ||
			r.Header.Get("RateLimit") != `"failed-auth";r=0;t=10000` {
			t.Errorf("429 headers: %v", r.Header)
		}
		// A key that succeeded from that address before the lock is served there still; one that
		// did not is answered as a guess.
		if r := guess("203.0.113.7", staffKey); r.Status != http.StatusOK {
			t.Errorf("a key known at the locked address: %d %s", r.Status, r.Body)
		}
		wantError(t, guess("203.0.113.7", partnerAKey), http.StatusTooManyRequests, "rate_limited")
		wantError(t, guess("203.0.113.7", "guess-g"), http.StatusTooManyRequests, "rate_limited")
		// The address is the last one in the trusted header: another client is unaffected,
		// whatever it claims in front.
		if r := guess("203.0.113.7, 192.0.2.55", staffKey); r.Status != http.StatusOK {
			t.Errorf("another address: %d", r.Status)
		}
		// Without the header, the connection's address counts (httptest's 192.0.2.1).
		if r := guess("", staffKey); r.Status != http.StatusOK {
			t.Errorf("connection address: %d", r.Status)
		}
	})
}

// Twenty failed keys from one address (an office, a NAT, a proxy that does not say who is behind
// it) lock the address. The keys and sessions that succeeded from it before keep being served,
// with their own rate; every other attempt gets the one 429 a wrong key gets, a valid credential
// never used from there included, and neither reaches the store nor a handler.
func TestALockedAddressServesOnlyCredentialsKnownThere(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		cs := &countingStore{Store: h.st}
		h.withDeps(t, func(d *api.Deps) {
			d.Store = cs
			d.Limits = api.Limits{Rate: 50, Burst: 100, FailureRate: 10.0 / 60, FailureBurst: 20,
				Now: func() time.Time { return fixtureNow }}
		})
		path := "/v1/crm/leads/" + leadA.String() + "/service-acceptance"
		known := []string{"Api-Key " + staffKey, "Api-Key " + partnerAKey, "Bearer " + staffSession}
		for _, auth := range known {
			if r := h.do(http.MethodGet, path, auth); r.Status != http.StatusOK {
				t.Fatalf("%s before the lock: %d %s", auth, r.Status, r.Body)
			}
		}
		for i := range 20 {
			wantError(t, h.get(path, fmt.Sprintf("guess-%016d", i)), http.StatusUnauthorized, "unauthenticated")
		}
		for _, auth := range known {
			for range 3 {
				r := h.do(http.MethodGet, path, auth)
				if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("RateLimit"), `"credential";`) {
					t.Fatalf("%s from the locked address: %d %s, RateLimit %q", auth, r.Status, r.Body, r.Header.Get("RateLimit"))
				}
			}
		}
		lookups := cs.count()
		wrong := h.do(http.MethodGet, path, "Api-Key guess-x-0000000000000")
		wantError(t, wrong, http.StatusTooManyRequests, "rate_limited")
		if wrong.Header.Get("RateLimit-Policy") != `"failed-auth";q=20;w=120` || wrong.Header.Get("Retry-After") != "6" {
			t.Errorf("429 headers %v", wrong.Header)
		}
		// Valid, but never used from this address: the same answer, to the byte.
		for _, auth := range []string{"Api-Key " + partnerBKey, "Api-Key " + noPermKey, "Bearer " + expiredToken, "Api-Key", ""} {
			r := h.do(http.MethodGet, path, auth)
			if diff := cmp.Diff(answer(wrong), answer(r)); diff != "" {
				t.Errorf("%q from the locked address answered unlike a wrong key (-wrong +got):\n%s", auth, diff)
			}
		}
		if cs.count() != lookups {
			t.Errorf("attempts from a locked address were looked up (%d lookups)", cs.count()-lookups)
		}
		// Every operation is open to the known ones: this one reaches its handler, which finds no
		// document.
		wantError(t, h.do(http.MethodDelete, "/v1/crm/merchants/"+merchantA.String()+"/documents/"+id(999).String(), "Api-Key "+staffKey),
			http.StatusNotFound, "not_found")
	})
}

// answer is a response as a client can compare two of them: everything but the request id, which
// is new on every answer.
func answer(r response) response {
	h := r.Header.Clone()
	h.Del("X-Request-Id")
	return response{Status: r.Status, Header: h, Body: r.Body}
}

func TestIPv6AddressesAreLimitedBySlash64(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		h.withDeps(t, func(d *api.Deps) { d.Limits = api.Limits{FailureRate: 0.0001, FailureBurst: 2} })
		path := "/v1/crm/leads/" + leadA.String() + "/service-acceptance"
		from := func(addr string) response {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.RemoteAddr = addr
			req.Header.Set("Authorization", "Api-Key nope")
			return h.send(req)
		}
		from("[2001:db8:1:2::1]:1000")
		from("[2001:db8:1:2::2]:1000")
		wantError(t, from("[2001:db8:1:2:ffff::9]:1000"), http.StatusTooManyRequests, "rate_limited")
		wantError(t, from("[2001:db8:1:3::1]:1000"), http.StatusUnauthorized, "unauthenticated")
	})
}

func TestObserverSeesPatternsNotPaths(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		obs := &recordingObserver{}
		h.withDeps(t, func(d *api.Deps) { d.Metrics = obs })
		h.get(decryptPath(leadA, principalA, "ssn"), staffKey)
		h.get(decryptPath(leadA, principalNoSSN, "ssn"), staffKey)
		h.get(decryptPath(leadA, principalA, "dob"), staffKey)
		h.do("BREW", "/v1/crm/leads/"+leadA.String()+"/service-acceptance", "")
		h.get("/no/such/"+leadA.String(), staffKey)
		want := []string{
			"GET GET /v1/crm/leads/{leadId}/principals/{principalId}/decrypt/{field} OK",
			"GET GET /v1/crm/leads/{leadId}/principals/{principalId}/decrypt/{field} Not Found",
			"GET GET /v1/crm/leads/{leadId}/principals/{principalId}/decrypt/{field} Bad Request",
			"other unmatched Method Not Allowed",
			"GET unmatched Not Found",
		}
		if diff := cmp.Diff(want, obs.requests); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"granted", "not_found", "invalid"}, obs.decrypts); diff != "" {
			t.Errorf("decrypts (-want +got):\n%s", diff)
		}
	})
}

// pushObserver remembers push outcomes.
type pushObserver struct {
	mu       sync.Mutex
	outcomes []string
}

func (o *pushObserver) ObservePush(outcome string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.outcomes = append(o.outcomes, outcome)
}

func TestPushOutcomesAreObserved(t *testing.T) {
	for name, c := range map[string]struct {
		opts []harnessOption
		want []string
	}{
		"gateway":    {want: []string{push.OutcomeSucceeded}},
		"no gateway": {opts: []harnessOption{withoutGateway}, want: []string{push.OutcomeNotConfigured}},
	} {
		t.Run(name, func(t *testing.T) {
			obs := &pushObserver{}
			opts := append(c.opts, func(pc *push.Config) { pc.Observer = obs })
			forEachEngine(t, func(t *testing.T, h *harness) {
				obs.outcomes = nil
				h.push(orderA, itemOK, staffKey)
				h.push(orderA, itemCanceled, staffKey) // a failed precondition never reaches the gateway
				if diff := cmp.Diff(c.want, obs.outcomes); diff != "" {
					t.Errorf("outcomes (-want +got):\n%s", diff)
				}
			}, opts...)
		})
	}
}
