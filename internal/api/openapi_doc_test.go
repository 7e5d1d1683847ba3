package api

import (
	"context"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestOpenAPIDocument checks that openapi.yaml is a valid OpenAPI 3.0.3 document
// and that it describes the five operations of the contract, each behind both
// authentication schemes.
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
	if got, want := doc.Info.Version, "1.3.0"; got != want {
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
	}
}
