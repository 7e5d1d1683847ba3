package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"backoffice/internal/api"
)

// Decrypt answers GET alone: HEAD (which the mux would let through to a GET route) and every
// other method get 405 with Allow: GET, and none of them writes an audit event.
func TestDecryptAnswersOnlyGET(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		path := decryptPath(leadA, principalA, "ssn")
		for _, m := range []string{http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions} {
			r := h.do(m, path, "Api-Key "+staffKey)
			if m == http.MethodHead {
				if r.Status != http.StatusMethodNotAllowed {
					t.Errorf("HEAD: %d, want 405", r.Status)
				}
			} else {
				wantError(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
			}
			if allow := r.Header.Get("Allow"); allow != "GET" {
				t.Errorf("%s: Allow = %q, want GET", m, allow)
			}
		}
		if n := len(h.audit(t, "principal.decrypt")); n != 0 {
			t.Fatalf("%d decrypt audit events after requests that are not GET", n)
		}
		if r := h.get(path, staffKey); r.Status != http.StatusOK {
			t.Fatalf("GET: %d %s", r.Status, r.Body)
		}
		if n := len(h.audit(t, "principal.decrypt")); n != 1 {
			t.Fatalf("%d decrypt audit events after one GET", n)
		}
	})
}

// A path that is not clean gets the JSON error body for every method, never the mux's redirect.
// Encoded dots and slashes are not path structure: they reach the handler as (invalid) ids.
func TestUncleanPathsAreNotRedirected(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		lead := leadA.String()
		cases := []struct {
			path   string
			status int
		}{
			{"/v1/crm/leads//" + lead + "/service-acceptance", http.StatusNotFound},
			{"/v1/crm/leads/" + lead + "//service-acceptance", http.StatusNotFound},
			{"/v1/crm/leads/./" + lead + "/service-acceptance", http.StatusNotFound},
			{"/v1/crm/x/../leads/" + lead + "/service-acceptance", http.StatusNotFound},
			{"//v1/crm/leads/" + lead + "/service-acceptance", http.StatusNotFound},
			{"/v1/crm/leads/" + lead + "/service-acceptance/.", http.StatusNotFound},
			{"/v1/crm/leads/" + lead + "/service-acceptance/..", http.StatusNotFound},
			{documentPath(merchantA, docA1) + "/../" + docA2.String(), http.StatusNotFound},
			{"/v1/crm/leads/%2E%2E/service-acceptance", http.StatusBadRequest},
			{"/v1/crm/leads/" + lead + "%2F..%2F" + lead + "/service-acceptance", http.StatusBadRequest},
		}
		for _, c := range cases {
			for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodDelete, http.MethodPut} {
				r := h.do(m, c.path, "Api-Key "+staffKey)
				want := c.status
				if want == http.StatusBadRequest && m != http.MethodGet && m != http.MethodHead {
					want = http.StatusMethodNotAllowed // a clean path of a GET route
				}
				if r.Status != want || r.Header.Get("Location") != "" {
					t.Errorf("%s %s: %d (Location %q), want %d: %s", m, c.path, r.Status, r.Header.Get("Location"), want, r.Body)
				}
			}
		}
		// Nothing was deleted through a path that only looked like another document's.
		if r := h.do(http.MethodDelete, documentPath(merchantA, docA2), "Api-Key "+staffKey); r.Status != http.StatusNoContent {
			t.Fatalf("delete docA2 afterwards: %d %s", r.Status, r.Body)
		}
	})
}

// More than one Authorization header is refused, whatever the headers hold: a proxy and the
// service could otherwise judge the request by different credentials.
func TestSeveralAuthorizationHeadersAreUnauthenticated(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		for _, headers := range [][]string{
			{"Api-Key " + staffKey, "Api-Key " + staffKey},
			{"Api-Key " + staffKey, "Bearer " + staffSession},
			{"Api-Key " + staffKey, ""},
			{"Api-Key " + noPermKey, "Api-Key " + staffKey},
		} {
			req := httptest.NewRequest(http.MethodGet, "/v1/crm/leads/"+leadA.String()+"/service-acceptance", nil)
			req.Header["Authorization"] = headers
			r := h.send(req)
			wantError(t, r, http.StatusUnauthorized, "unauthenticated")
			if !strings.Contains(r.Header.Get("WWW-Authenticate"), "Api-Key") {
				t.Errorf("%q: WWW-Authenticate = %q", headers, r.Header.Get("WWW-Authenticate"))
			}
		}
		if r := h.get("/v1/crm/leads/"+leadA.String()+"/service-acceptance", staffKey); r.Status != http.StatusOK {
			t.Fatalf("one header: %d %s", r.Status, r.Body)
		}
	})
}

// The 405 answers are the document's MethodNotAllowed response. (The harness's validate cannot
// find an operation for a method a path does not have, so the schema is checked here.)
func TestMethodNotAllowedMatchesTheDocument(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPIDocument())
	if err != nil {
		t.Fatal(err)
	}
	resp := doc.Components.Responses["MethodNotAllowed"].Value
	schema := resp.Content.Get("application/json").Schema.Value
	forEachEngine(t, func(t *testing.T, h *harness) {
		for _, c := range []struct{ method, path string }{
			{http.MethodPost, decryptPath(leadA, principalA, "ssn")},
			{http.MethodPut, "/v1/crm/leads/" + leadA.String() + "/service-acceptance"},
			{http.MethodGet, documentPath(merchantA, docA1)},
		} {
			r := h.do(c.method, c.path, "")
			var body any
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatalf("%s %s: %v", c.method, c.path, err)
			}
			if err := schema.VisitJSON(body); err != nil {
				t.Errorf("%s %s: %v", c.method, c.path, err)
			}
			if r.Header.Get("Allow") == "" {
				t.Errorf("%s %s: no Allow header", c.method, c.path)
			}
		}
	})
}
