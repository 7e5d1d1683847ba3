package api_test

import (
	"log/slog"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"backoffice/internal/api"
	"backoffice/internal/testdb"
)

// A request span is named after the route pattern, never the path: an unknown route is
// "unmatched", and an id in the path goes nowhere in the span.
func TestRequestSpansNameTheRouteNotThePath(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		exp := tracetest.NewInMemoryExporter()
		h.handler = api.New(api.Deps{Store: h.st, Ring: testdb.Ring(t), Logger: slog.New(slog.DiscardHandler),
			Tracer: sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))})
		h.get("/v1/crm/leads/"+leadA.String()+"/service-acceptance", staffKey)
		h.get("/v1/crm/nowhere/"+leadA.String(), staffKey)
		spans := exp.GetSpans()
		if len(spans) != 2 {
			t.Fatalf("%d spans, want 2", len(spans))
		}
		if spans[0].Name != "GET /v1/crm/leads/{leadId}/service-acceptance" || spans[1].Name != "unmatched" {
			t.Errorf("span names %q, %q", spans[0].Name, spans[1].Name)
		}
		for _, s := range spans {
			for _, kv := range s.Attributes {
				if strings.Contains(kv.Value.String(), leadA.String()) || strings.Contains(kv.Value.String(), staffKey) {
					t.Errorf("span %s attribute %s = %s holds an id or a key", s.Name, kv.Key, kv.Value.String())
				}
			}
		}
		if got := spans[1].Attributes; len(got) != 2 { // method and status only
			t.Errorf("unmatched span attributes %v", got)
		}
	})
}
