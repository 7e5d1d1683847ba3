package api

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestOpenAPIDocument checks that openapi.yaml is a valid OpenAPI 3.0.3 document, that it
// describes the five operations of the contract and the audit list, each behind both
// authentication schemes with its browser preflight, and that every operation of every path
// has a default response (ogen's convenient error type is made from it) and a 4xx one, and
// declares X-Request-Id on every response, and every GET path but decrypt its HEAD.
func TestOpenAPIDocument(t *testing.T) {
	ctx := context.Background()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile("openapi.yaml")
	if err != nil {
		t.Fatalf("load openapi.yaml: %v", err)
	}
	if err := doc.Validate(ctx); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	if got, want := doc.OpenAPI, "3.0.3"; got != want {
		t.Errorf("openapi = %q, want %q", got, want)
	}
	if got, want := doc.Info.Version, "1.7.0"; got != want {
		t.Errorf("info.version = %q, want %q", got, want)
	}

	ops := []struct {
		method, path, operationID string
	}{
		{"POST", "/v1/crm/deployment-orders/{orderId}/line-items/{lineItemId}/device-parameters", "pushLineItemDeviceParameters"},
		{"GET", "/v1/crm/sam-action-logs/{entityId}", "listSamActionLogs"},
		{"GET", "/v1/crm/leads/{leadId}/service-acceptance", "getLeadServiceAcceptance"},
		{"GET", "/v1/crm/leads/{leadId}/principals/{principalId}/decrypt/{field}", "decryptLeadPrincipalField"},
		{"DELETE", "/v1/crm/merchants/{merchantId}/documents/{documentId}", "deleteMerchantDocument"},
		{"GET", "/v1/audit-events", "listAuditEvents"},
		{"GET", "/v1/audit-log/checkpoint", "getAuditLogCheckpoint"},
	}
	for _, o := range ops {
		item := doc.Paths.Value(o.path)
		if item == nil {
			t.Errorf("path %s missing", o.path)
			continue
		}
		op := item.GetOperation(o.method)
		if op == nil {
			t.Errorf("%s %s missing", o.method, o.path)
			continue
		}
		if op.OperationID != o.operationID {
			t.Errorf("%s %s: operationId = %q, want %q", o.method, o.path, op.OperationID, o.operationID)
		}
		if op.Security == nil || len(*op.Security) != 2 ||
			(*op.Security)[0]["bearerAuth"] == nil || (*op.Security)[1]["apiKeyAuth"] == nil {
			t.Errorf("%s: security must be [{bearerAuth: []}, {apiKeyAuth: []}]", o.operationID)
		}
		if op.Responses.Value("401") == nil || op.Responses.Value("500") == nil || op.Responses.Value("503") == nil {
			t.Errorf("%s: 401, 500 and 503 responses must be documented", o.operationID)
		}
		if item.Options == nil || item.Options.Responses.Value("204") == nil {
			t.Errorf("%s: no CORS preflight (OPTIONS with a 204)", o.operationID)
		}
	}
	for name, ref := range doc.Components.Schemas {
		walkSchema(ref.Value, map[*openapi3.Schema]bool{}, func(s *openapi3.Schema) {
			if slices.Contains(s.Enum, nil) {
				t.Errorf("schema %s: an enum with a null member %v; nullable: true says it", name, s.Enum)
			}
			if s.Nullable && len(s.AllOf)+len(s.AnyOf)+len(s.OneOf) > 0 {
				t.Errorf("schema %s: nullable beside allOf/anyOf/oneOf, which a JSON Schema validator reads as not null", name)
			}
		})
	}
	for path, item := range doc.Paths.Map() {
		if item.Get != nil && (item.Head == nil) != strings.Contains(path, "/decrypt/") {
			t.Errorf("%s: HEAD declared %v; every GET path answers it but decrypt", path, item.Head != nil)
		}
		for method, op := range item.Operations() {
			if d := op.Responses.Default(); d == nil || d.Ref != "#/components/responses/Error" {
				t.Errorf("%s %s: no default response (components/responses/Error)", method, path)
			}
			has4xx := false
			for status, r := range op.Responses.Map() {
				if r.Value.Headers["X-Request-Id"] == nil {
					t.Errorf("%s %s -> %s: X-Request-Id not declared", method, path, status)
				}
				has4xx = has4xx || strings.HasPrefix(status, "4")
			}
			// Every operation can be refused (a header over the limit, if nothing else), and linters
			// (Redocly's operation-4xx-response) ask that it say so.
			if !has4xx {
				t.Errorf("%s %s: no 4xx response declared", method, path)
			}
		}
	}
}

// walkSchema calls fn on s and every schema within it.
func walkSchema(s *openapi3.Schema, seen map[*openapi3.Schema]bool, fn func(*openapi3.Schema)) {
	if s == nil || seen[s] {
		return
	}
	seen[s] = true
	fn(s)
	for _, list := range []openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf} {
		for _, r := range list {
			walkSchema(r.Value, seen, fn)
		}
	}
	for _, r := range s.Properties {
		walkSchema(r.Value, seen, fn)
	}
	if s.Items != nil {
		walkSchema(s.Items.Value, seen, fn)
	}
}
