package api_test

import (
	"net/http"
	"strings"
	"testing"
)

func samPath(entity string) string { return "/v1/crm/sam-action-logs/" + entity }

// auditEventsPath is the audit list, the sixth route of operations().
const auditEventsPath = "/v1/audit-events"

// Every operation a credential calls: the five operations, with valid ids of partner A's objects,
// and the audit list, for the checks that apply to all.
func operations() []struct{ method, path string } {
	return []struct{ method, path string }{
		{http.MethodPost, "/v1/crm/deployment-orders/" + orderA.String() + "/line-items/" + itemOK.String() + "/device-parameters"},
		{http.MethodGet, samPath(leadA.String())},
		{http.MethodGet, "/v1/crm/leads/" + leadA.String() + "/service-acceptance"},
		{http.MethodGet, "/v1/crm/leads/" + leadA.String() + "/principals/" + principalA.String() + "/decrypt/ssn"},
		{http.MethodDelete, "/v1/crm/merchants/" + merchantA.String() + "/documents/" + docA1.String()},
		{http.MethodGet, auditEventsPath},
	}
}

func TestAuthenticationFailuresAre401(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		headers := []string{
			"", "Api-Key", "Api-Key ", "Bearer", "Bearer   ", "Basic c3RhZmY6cGFzcw==", "ApiKey " + staffKey,
			"Api-Key unknown-key-0000000000001", "Api-Key " + expiredKey, "Bearer " + expiredToken,
			"Bearer " + staffKey,        // an API key is valid only as Api-Key
			"Api-Key " + staffSession,   // and a session token only as Bearer
			"Api-Key " + staffKey + "x", // near misses are misses
		}
		for _, op := range operations() {
			for _, hdr := range headers {
				r := h.do(op.method, op.path, hdr)
				wantError(t, r, http.StatusUnauthorized, "unauthenticated")
				if got := r.Header.Get("WWW-Authenticate"); got != "Bearer, Api-Key" {
					t.Errorf("WWW-Authenticate = %q", got)
				}
			}
		}
	})
}

func TestSchemesAreCaseInsensitive(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		path := "/v1/crm/leads/" + leadA.String() + "/service-acceptance"
		for _, hdr := range []string{"Api-Key " + staffKey, "api-key " + staffKey, "API-KEY   " + staffKey,
			"Bearer " + staffSession, "bearer " + staffSession, "BEARER  " + staffSession} {
			if r := h.do(http.MethodGet, path, hdr); r.Status != http.StatusOK {
				t.Errorf("%q: status %d: %s", hdr, r.Status, r.Body)
			}
		}
	})
}

// The contract's order: authentication, parameter syntax, permission, existence, state.
func TestCheckOrder(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		bad := "not-a-uuid"
		// Bad syntax beats missing permission.
		wantError(t, h.get(samPath(bad), noPermKey), http.StatusBadRequest, "invalid_parameter")
		// Missing permission beats a missing object.
		wantError(t, h.get(samPath(id(999999).String()), noPermKey), http.StatusForbidden, "forbidden")
		// Unauthenticated beats everything.
		wantError(t, h.do(http.MethodGet, samPath(bad), ""), http.StatusUnauthorized, "unauthenticated")
		// Permitted but another partner's: 404, exactly as if it did not exist.
		wantError(t, h.get(samPath(leadB.String()), partnerAKey), http.StatusNotFound, "not_found")
		wantError(t, h.get(samPath(id(999999).String()), partnerAKey), http.StatusNotFound, "not_found")
		// A missing object beats a failed precondition (push of a canceled item of another partner).
		wantError(t, h.do(http.MethodPost, "/v1/crm/deployment-orders/"+orderB.String()+"/line-items/"+itemCanceled.String()+"/device-parameters",
			"Api-Key "+staffKey), http.StatusNotFound, "not_found")
	})
}

func TestEveryOperationNeedsItsPermission(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		for _, op := range operations() {
			r := h.do(op.method, op.path, "Api-Key "+noPermKey)
			wantError(t, r, http.StatusForbidden, "forbidden")
		}
	})
}

// Another partner's objects answer as missing ones. The audit list names every partner's objects:
// a partner's user may not read it at all.
func TestCrossPartnerAccessIs404(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		for _, op := range operations() {
			r := h.do(op.method, op.path, "Api-Key "+partnerBKey)
			if op.path == auditEventsPath {
				wantError(t, r, http.StatusForbidden, "forbidden")
				continue
			}
			wantError(t, r, http.StatusNotFound, "not_found")
			if strings.Contains(string(r.Body), "partner") {
				t.Errorf("%s %s: the 404 hints at another partner: %s", op.method, op.path, r.Body)
			}
		}
	})
}

func TestInvalidIDsAre400NamingTheParameter(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		cases := []struct{ path, param string }{
			{samPath("nope"), "entityId"},
			{"/v1/crm/leads/x/service-acceptance", "leadId"},
			{"/v1/crm/leads/" + leadA.String() + "/principals/x/decrypt/ssn", "principalId"},
			{"/v1/crm/leads/x/principals/" + principalA.String() + "/decrypt/ssn", "leadId"},
		}
		for _, c := range cases {
			r := h.get(c.path, staffKey)
			wantError(t, r, http.StatusBadRequest, "invalid_parameter")
			if e := r.err(t); !strings.Contains(e.Detail, c.param) || e.Parameter != c.param {
				t.Errorf("%s: detail %q, parameter %q; want both to name %s", c.path, e.Detail, e.Parameter, c.param)
			}
		}
		for _, c := range []struct{ method, path, param string }{
			{http.MethodDelete, "/v1/crm/merchants/" + merchantA.String() + "/documents/zzz", "documentId"},
			{http.MethodDelete, "/v1/crm/merchants/zzz/documents/" + docA1.String(), "merchantId"},
			{http.MethodPost, "/v1/crm/deployment-orders/zzz/line-items/" + itemOK.String() + "/device-parameters", "orderId"},
			{http.MethodPost, "/v1/crm/deployment-orders/" + orderA.String() + "/line-items/zzz/device-parameters", "lineItemId"},
			{http.MethodGet, samPath(leadA.String()) + "?page=0", "page"},
			{http.MethodGet, samPath(leadA.String()) + "?size=101", "size"},
			{http.MethodGet, "/v1/audit-events?outcome=maybe", "outcome"},
			{http.MethodGet, "/v1/audit-events?from=yesterday", "from"},
			{http.MethodGet, "/v1/audit-events?actorUserId=x", "actorUserId"},
		} {
			r := h.do(c.method, c.path, "Api-Key "+staffKey)
			wantError(t, r, http.StatusBadRequest, "invalid_parameter")
			if e := r.err(t); e.Parameter != c.param {
				t.Errorf("%s %s: parameter %q, want %s", c.method, c.path, e.Parameter, c.param)
			}
		}
		r := h.get(decryptPath(leadA, principalA, "dob"), staffKey)
		wantError(t, r, http.StatusBadRequest, "unsupported_field")
		if e := r.err(t); e.Parameter != "field" {
			t.Errorf("unsupported field: parameter %q, want field", e.Parameter)
		}
	})
}

// The id rule (domain.ParseID) at the HTTP edge: which ids parse.
func TestUUIDSyntaxAtTheEdge(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		lead := leadA.String()
		cases := []struct {
			id     string
			status int
		}{
			{lead, http.StatusOK},
			{strings.ToUpper(lead), http.StatusOK}, // case does not make another id
			{"00000000-0000-0000-0000-000000000000", http.StatusNotFound},
			{"FFFFFFFF-ffff-FFFF-ffff-FFFFFFFFFFFF", http.StatusNotFound},
			{"00000000-0000-1000-8000-000000000301", http.StatusNotFound},   // version 1: fine, unknown
			{"00000000-0000-8000-b000-000000000301", http.StatusNotFound},   // version 8, variant b
			{"00000000-0000-0000-8000-000000000301", http.StatusBadRequest}, // version 0
			{"00000000-0000-9000-8000-000000000301", http.StatusBadRequest}, // version 9
			{"00000000-0000-4000-c000-000000000301", http.StatusBadRequest}, // variant c
			{"00000000-0000-4000-7000-000000000301", http.StatusBadRequest}, // variant 7
			{"000000000000-4000-8000-000000000301", http.StatusBadRequest},
			{"00000000-0000-4000-8000-00000000030g", http.StatusBadRequest},
			{"{00000000-0000-4000-8000-000000000301}", http.StatusBadRequest},
			{"00000000000040008000000000000301", http.StatusBadRequest},
		}
		for _, c := range cases {
			r := h.get(samPath(c.id), staffKey)
			if r.Status != c.status {
				t.Errorf("%s: status %d, want %d: %s", c.id, r.Status, c.status, r.Body)
			}
		}
	})
}

func TestRouterErrorsUseTheErrorBody(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		wantError(t, h.get("/v1/nothing/here", staffKey), http.StatusNotFound, "not_found")
		wantError(t, h.do(http.MethodGet, "/", ""), http.StatusNotFound, "not_found")
		r := h.do(http.MethodPut, "/v1/crm/leads/"+leadA.String()+"/service-acceptance", "Api-Key "+staffKey)
		wantError(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
		if e := r.err(t); !strings.Contains(e.Detail, `method "PUT" is not allowed`) {
			t.Errorf("detail %q does not name the method", e.Detail)
		}
		r = h.do("FOO", "/v1/crm/leads/"+leadA.String()+"/service-acceptance", "Api-Key "+staffKey)
		if e := r.err(t); r.Status != http.StatusMethodNotAllowed || !strings.Contains(e.Detail, `method "FOO" is not allowed`) {
			t.Errorf("FOO: %d, detail %q; want 405 naming the method", r.Status, e.Detail)
		}
		if allow := r.Header.Get("Allow"); !strings.Contains(allow, "GET") {
			t.Errorf("Allow = %q", allow)
		}
		r = h.do(http.MethodGet, "/v1/crm/merchants/"+merchantA.String()+"/documents/"+docA1.String(), "Api-Key "+staffKey)
		wantError(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
		if allow := r.Header.Get("Allow"); allow != "DELETE" {
			t.Errorf("Allow = %q, want DELETE", allow)
		}
	})
}

func TestOpenAPIDocumentIsServed(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		r := h.do(http.MethodGet, "/openapi.yaml", "")
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "version: 1.7.0") {
			t.Fatalf("status %d, body starts %.80q", r.Status, r.Body)
		}
	})
}
