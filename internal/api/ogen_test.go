package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	// The runtime that ogen's output imports. Importing it here keeps it in go.mod and go.sum and
	// in the module cache, so the generated client compiles offline.
	_ "github.com/go-faster/errors"
	_ "github.com/go-faster/jx"
	_ "github.com/ogen-go/ogen/conv"
	_ "github.com/ogen-go/ogen/http"
	_ "github.com/ogen-go/ogen/json"
	_ "github.com/ogen-go/ogen/middleware"
	_ "github.com/ogen-go/ogen/ogenerrors"
	_ "github.com/ogen-go/ogen/ogenregex"
	_ "github.com/ogen-go/ogen/otelogen"
	_ "github.com/ogen-go/ogen/uri"
	_ "github.com/ogen-go/ogen/validate"
	_ "go.opentelemetry.io/otel/metric"

	"backoffice/internal/api"
	"backoffice/internal/testdb"
)

// TestOgenClientReadsAGrownContract is the contract's promise to its clients, kept by a client
// nobody here wrote: ogen (pinned in go.mod's tool block, default options) generates a client
// from openapi.yaml, and that client calls this service as a later version might answer: every
// JSON object of every answer with a field the document does not list, every error with a code
// it does not know, and a status no operation lists. The client must read them all, the last as
// ogen's convenient error type (made from the operations' default response). A closed schema
// (additionalProperties: false), a closed enum of codes, or a document without a common default
// response fails here; so does a null member in an enum (ogen makes a constant of it) and a
// nullable object the client cannot decode as null (the line item without inventory unit or
// shipment).
func TestOgenClientReadsAGrownContract(t *testing.T) {
	if testing.Short() {
		t.Skip("generates, compiles and runs a client: slow")
	}
	h := newHarness(t, testdb.Open(t, "sqlite"))
	grown := httptest.NewServer(grow(t, h.handler))
	t.Cleanup(grown.Close)

	dir := api.GeneratedDir(t)
	api.GoCmd(t, ".", nil, "tool", "ogen", "-package", "gen", "-target", dir, "openapi.yaml")
	if err := os.WriteFile(filepath.Join(dir, "grown_test.go"), []byte(grownClientTest), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"GOPROXY=off", "GOFLAGS=-mod=readonly", "GROWN_URL=" + grown.URL, "GROWN_KEY=Api-Key " + staffKey,
		"LEAD=" + leadA.String(), "ORDER=" + orderA.String(), "LINE_ITEM=" + itemCanceled.String(), "BARE_LINE_ITEM=" + itemBare.String(),
		"TEAPOT_LEAD=" + teapotLead}
	api.GoCmd(t, ".", env, "test", "-count=1", "./"+filepath.ToSlash(dir))
	src, err := os.ReadFile(filepath.Join(dir, "oas_schemas_gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(src, []byte(`"<nil>"`)) {
		t.Error(`the generated client has an enum member "<nil>"`)
	}
}

// teapotLead is a lead whose service acceptance the grown service answers with a status no
// operation lists.
const teapotLead = "00000000-0000-4000-8000-000000000418"

// grow answers as next handler does, with a field "addedInALaterVersion" in every JSON object
// and, on an error, the code "gone_forever".
func grow(t *testing.T, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		if strings.Contains(r.URL.Path, teapotLead) {
			rec = httptest.NewRecorder()
			rec.Header().Set("Content-Type", "application/json")
			rec.Header().Set("X-Request-Id", "0123456789abcdef")
			rec.WriteHeader(http.StatusTeapot)
			_, _ = rec.WriteString(`{"status":418,"code":"teapot","detail":"a status of a later version"}`)
		}
		body := rec.Body.Bytes()
		if len(body) > 0 && rec.Header().Get("Content-Type") == "application/json" {
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Errorf("%s %s: %v", r.Method, r.URL, err)
			}
			if rec.Code >= 400 {
				v.(map[string]any)["code"] = "gone_forever"
			}
			body, _ = json.Marshal(addField(v))
		}
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

func addField(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = addField(e)
		}
		v["addedInALaterVersion"] = map[string]any{"nested": []any{1, "two"}}
	case []any:
		for i, e := range v {
			v[i] = addField(e)
		}
	}
	return v
}

// grownClientTest runs in the generated package, against the grown service.
const grownClientTest = `package gen

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/ogen-go/ogen/ogenerrors"
)

type apiKey string

func (k apiKey) ApiKeyAuth(context.Context, OperationName) (ApiKeyAuth, error) {
	return ApiKeyAuth{APIKey: string(k)}, nil
}

func (apiKey) BearerAuth(context.Context, OperationName) (BearerAuth, error) {
	return BearerAuth{}, ogenerrors.ErrSkipClientSecurity
}

func TestGrownAnswers(t *testing.T) {
	ctx := context.Background()
	c, err := NewClient(os.Getenv("GROWN_URL"), apiKey(os.Getenv("GROWN_KEY")))
	if err != nil {
		t.Fatal(err)
	}

	sa, err := c.GetLeadServiceAcceptance(ctx, GetLeadServiceAcceptanceParams{LeadId: os.Getenv("LEAD")})
	if err != nil {
		t.Fatalf("service acceptance with added fields: %v", err)
	}
	if got, ok := sa.(*ServiceAcceptanceHeaders); !ok || !got.Response.Configured || len(got.Response.CardPlans) == 0 {
		t.Errorf("service acceptance: %#v", sa)
	}

	logs, err := c.ListSamActionLogs(ctx, ListSamActionLogsParams{EntityId: os.Getenv("LEAD"), Page: NewOptInt64(2), Size: NewOptInt64(5)})
	if err != nil {
		t.Fatalf("SAM action logs with added fields: %v", err)
	}
	if got, ok := logs.(*SamActionLogListHeaders); !ok || got.Response.Meta.Page != 2 || len(got.Response.Data) != 5 {
		t.Errorf("SAM action logs: %#v", logs)
	}

	push, err := c.PushLineItemDeviceParameters(ctx, PushLineItemDeviceParametersParams{OrderId: os.Getenv("ORDER"), LineItemId: os.Getenv("LINE_ITEM")})
	if err != nil {
		t.Fatalf("409 with an unknown code: %v", err)
	}
	if got, ok := push.(*ConflictHeaders); !ok || got.Response.Code != "gone_forever" {
		t.Errorf("push: %#v", push)
	}

	missing, err := c.GetLeadServiceAcceptance(ctx, GetLeadServiceAcceptanceParams{LeadId: "00000000-0000-4000-8000-00000000dead"})
	if err != nil {
		t.Fatalf("404 with an unknown code: %v", err)
	}
	if got, ok := missing.(*NotFoundHeaders); !ok || got.Response.Code != "gone_forever" || got.XRequestID == "" {
		t.Errorf("missing lead: %#v", missing)
	}

	// A status no operation lists comes as the convenient error type, the error body decoded.
	_, err = c.GetLeadServiceAcceptance(ctx, GetLeadServiceAcceptanceParams{LeadId: os.Getenv("TEAPOT_LEAD")})
	var e *ErrorStatusCodeWithHeaders
	if !errors.As(err, &e) || e.StatusCode != 418 || e.Response.Code != "gone_forever" || e.XRequestID == "" {
		t.Errorf("a status no operation lists: %v", err)
	}

	// A line item without inventory unit and shipment: both decode as null.
	bare, err := c.PushLineItemDeviceParameters(ctx, PushLineItemDeviceParametersParams{OrderId: os.Getenv("ORDER"), LineItemId: os.Getenv("BARE_LINE_ITEM")})
	if err != nil {
		t.Fatalf("push of a line item with null objects: %v", err)
	}
	got, ok := bare.(*DeploymentOrderLineItemHeaders)
	if !ok || !got.Response.InventoryUnit.IsNull() || !got.Response.Shipment.IsNull() || got.Response.Equipment.IsNull() {
		t.Errorf("push of a line item with null objects: %#v", bare)
	}
}
`
