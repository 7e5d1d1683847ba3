package api_test

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"backoffice/internal/api"
	"backoffice/internal/push"
	"backoffice/internal/testdb"
)

// A request span is named after the route pattern, never the path: every operation's span is its
// method and path template, an unknown route is "unmatched", and no id or key of the request goes
// anywhere in a span.
func TestRequestSpansNameTheRouteNotThePath(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		exp := tracetest.NewInMemoryExporter()
		log := slog.New(slog.DiscardHandler)
		h.handler = api.New(api.Deps{Store: h.st, Ring: testdb.Ring(t), Logger: log, Pusher: push.New(push.Config{Store: h.st, Logger: log}),
			Now: func() time.Time { return fixtureNow }, Tracer: sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))})
		var want []string
		for _, op := range operations() {
			h.do(op.method, op.path, "Api-Key "+staffKey)
			route, _, err := router(t).FindRoute(httptest.NewRequest(op.method, op.path, nil))
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, op.method+" "+route.Path)
		}
		h.get("/v1/crm/nowhere/"+leadA.String(), staffKey)
		want = append(want, "unmatched")
		spans := exp.GetSpans()
		if len(spans) != len(want) {
			t.Fatalf("%d spans, want %d", len(spans), len(want))
		}
		for i, s := range spans {
			if s.Name != want[i] {
				t.Errorf("span %d named %q, want %q", i, s.Name, want[i])
			}
			for _, kv := range s.Attributes {
				for _, secret := range []string{leadA.String(), principalA.String(), merchantA.String(), docA1.String(), orderA.String(), itemOK.String(), staffKey} {
					if strings.Contains(kv.Value.String(), secret) {
						t.Errorf("span %s attribute %s = %s holds an id or a key", s.Name, kv.Key, kv.Value.String())
					}
				}
			}
		}
		if got := spans[len(spans)-1].Attributes; len(got) != 2 { // method and status only
			t.Errorf("unmatched span attributes %v", got)
		}
	})
}
