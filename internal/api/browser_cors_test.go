package api_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"backoffice/internal/api"
	"backoffice/internal/gateway"
	"backoffice/internal/push"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// browserCall is one fetch a page makes, and what the page could read of its answer.
type browserCall struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
}

type browserAnswer struct {
	Status  int               `json:"status"`
	Body    string            `json:"body"`
	Headers map[string]string `json:"headers"` // the readable ones; a header the page cannot read is absent
	Error   string            `json:"error"`   // the fetch failed: CORS refused it
}

// fetchAll makes the calls from the page, one after another, against the service at base.
func (p *page) fetchAll(base string, calls []browserCall) []browserAnswer {
	p.b.t.Helper()
	cs, _ := json.Marshal(calls)
	script := fmt.Sprintf(`(async (base, calls) => {
  const names = ["ratelimit", "ratelimit-policy", "retry-after", "idempotent-replayed", "x-request-id", "content-type"];
  const out = [];
  for (const c of calls) {
    try {
      const r = await fetch(base + c.path, {method: c.method, headers: c.headers});
      const headers = {};
      for (const n of names) { const v = r.headers.get(n); if (v !== null) headers[n] = v; }
      out.push({status: r.status, body: await r.text(), headers});
    } catch (e) {
      out.push({error: String(e)});
    }
  }
  return out;
})(%q, %s)`, base, cs)
	var out []browserAnswer
	p.eval(script, &out)
	return out
}

// pageServer serves an empty page: its URL is an origin the browser runs scripts from.
func pageServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!DOCTYPE html><title>a CRM front end</title>")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A page of a configured origin, in a real Chromium, calls each operation and the audit list
// with the Authorization and Idempotency-Key headers, and reads bodies and the headers the
// service exposes; a page of another origin is refused, before the browser sends the call.
func TestCORSInBrowser(t *testing.T) {
	b := startBrowser(t)
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		if st.Engine() != "sqlite" {
			t.Skip("the browser's side does not depend on the engine")
		}
		h := newHarness(t, st)
		crm, other := pageServer(t), pageServer(t)
		h.withDeps(t, func(d *api.Deps) {
			d.CORSOrigins = []string{crm.URL}
			// A burst of 10 per credential, on a clock that stands still: the eleventh call of a
			// credential is refused with Retry-After.
			d.Limits = api.Limits{Rate: 1, Burst: 10, Now: func() time.Time { return fixtureNow }}
			gw := httptest.NewServer(h.sim)
			t.Cleanup(gw.Close)
			d.Pusher = push.New(push.Config{Store: st, Gateway: gateway.New(gateway.Config{BaseURL: gw.URL, Token: "gw-token", Timeout: 2 * time.Second}),
				Budget: 2 * time.Second, Now: func() time.Time { return fixtureNow }, Logger: slog.New(slog.NewJSONHandler(h.logs, nil))})
		})
		svc := httptest.NewServer(h.handler)
		t.Cleanup(svc.Close)

		staff := map[string]string{"Authorization": "Api-Key " + staffKey}
		withKey := map[string]string{"Authorization": "Api-Key " + staffKey, "Idempotency-Key": "crm-push-1"}
		calls := []browserCall{
			{http.MethodPost, pushPath(orderA, itemOK), withKey},
			{http.MethodPost, pushPath(orderA, itemOK), withKey},
			{http.MethodGet, samPath(leadA.String()) + "?page=1&size=5", staff},
			{http.MethodGet, "/v1/crm/leads/" + leadA.String() + "/service-acceptance", staff},
			{http.MethodGet, decryptPath(leadA, principalA, "ssn"), staff},
			{http.MethodDelete, documentPath(merchantA, docA1), staff},
			{http.MethodGet, "/v1/audit-events?size=5", staff},
		}
		noPerm := browserCall{http.MethodGet, "/v1/audit-events", map[string]string{"Authorization": "Api-Key " + noPermKey}}
		for range 11 {
			calls = append(calls, noPerm)
		}
		got := b.open(crm.URL).fetchAll(svc.URL, calls)
		if len(got) != len(calls) {
			t.Fatalf("%d answers to %d calls", len(got), len(calls))
		}
		wants := []struct {
			status int
			body   string // part of the body
		}{
			{200, `"id":"` + itemOK.String()}, {200, `"id":"` + itemOK.String()},
			{200, `"perPage":5`}, {200, `"configured":true`}, {200, `"ssn":"123-45-6789"`},
			{204, ""}, {200, `"action":"principal.decrypt"`},
		}
		for i, w := range wants {
			a := got[i]
			if a.Error != "" || a.Status != w.status || !strings.Contains(a.Body, w.body) {
				t.Errorf("%s %s: %+v, want %d with %s", calls[i].Method, calls[i].Path, a, w.status, w.body)
			}
			for _, name := range []string{"ratelimit", "ratelimit-policy", "x-request-id"} {
				if a.Headers[name] == "" {
					t.Errorf("%s %s: the page cannot read %s: %v", calls[i].Method, calls[i].Path, name, a.Headers)
				}
			}
		}
		if got[0].Headers["idempotent-replayed"] != "" || got[1].Headers["idempotent-replayed"] != "true" {
			t.Errorf("Idempotent-Replayed: first %q, repeat %q; want none, then true", got[0].Headers["idempotent-replayed"], got[1].Headers["idempotent-replayed"])
		}
		last := got[len(got)-1]
		if last.Status != http.StatusTooManyRequests || last.Headers["retry-after"] == "" || !strings.Contains(last.Body, `"rate_limited"`) {
			t.Errorf("over the burst: %+v, want 429 with a readable Retry-After", last)
		}

		// Another origin: a call that needs a preflight never reaches the service (the document
		// is still there after), and a simple one is sent but its answer is kept from the page.
		blocked := b.open(other.URL).fetchAll(svc.URL, []browserCall{
			{http.MethodDelete, documentPath(merchantA, docA2), staff},
			{http.MethodGet, samPath(leadA.String()), staff},
			{http.MethodGet, "/v1/audit-events", nil},
		})
		for i, a := range blocked {
			if a.Error == "" {
				t.Errorf("call %d from an origin not listed: %+v, want it refused by the browser", i, a)
			}
		}
		after := b.open(crm.URL).fetchAll(svc.URL, []browserCall{{http.MethodDelete, documentPath(merchantA, docA2), map[string]string{"Authorization": "Api-Key " + partnerAKey}}})
		if after[0].Status != http.StatusNoContent {
			t.Errorf("the document a refused page asked to delete: %+v, want it still there (204 now)", after[0])
		}
	})
}
