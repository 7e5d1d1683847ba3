package app

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"backoffice/internal/testdb"
)

// flakyGateway answers 503 to its first request and 200 after, remembering the headers it got.
type flakyGateway struct {
	mu      sync.Mutex
	headers []http.Header
}

func (g *flakyGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.headers = append(g.headers, r.Header.Clone())
	n := len(g.headers)
	g.mu.Unlock()
	if n == 1 {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.Write([]byte(`{"pushId":"p-1"}`))
}

func (g *flakyGateway) received() []http.Header {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]http.Header(nil), g.headers...)
}

// pushDemoTerminal serves the demo dataset through the handler as serve wires it, with a gateway
// that fails once, and pushes the demo line item: a push with one retry. header is added to the
// push request; tp, when not nil, traces it.
func pushDemoTerminal(t *testing.T, log *slog.Logger, tp trace.TracerProvider, header http.Header) *flakyGateway {
	t.Helper()
	st := testdb.Open(t, "sqlite")
	ring := testdb.Ring(t, "k1")
	importDataset(t, st, importableDemo(time.Now().UTC()), ring)
	gw := &flakyGateway{}
	gwSrv := httptest.NewServer(gw)
	t.Cleanup(gwSrv.Close)
	cfg := Config{GatewayURL: gwSrv.URL, GatewayToken: "gw-secret-token", GatewayTimeout: 5 * time.Second}
	srv := httptest.NewServer(newHandler(cfg, st, ring, log, nil, tp))
	t.Cleanup(srv.Close)
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/crm/deployment-orders/"+string(demoOrder)+"/line-items/"+string(demoLineItem)+"/device-parameters", nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Api-Key "+importedStaffKey)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("push answered %d", resp.StatusCode)
	}
	if n := len(gw.received()); n != 2 {
		t.Fatalf("gateway got %d requests, want 2", n)
	}
	return gw
}

// At debug level, serve logs each gateway attempt, without the token or the payload.
func TestServeLogsGatewayAttemptsAtDebug(t *testing.T) {
	logs := &lockedBuffer{}
	pushDemoTerminal(t, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), nil, nil)
	var attempts []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if m["msg"] == "gateway attempt" {
			attempts = append(attempts, m)
		}
	}
	if len(attempts) != 2 || attempts[0]["status"] != 503.0 || attempts[0]["retry"] != true ||
		attempts[1]["status"] != 200.0 || attempts[1]["retry"] != false {
		t.Errorf("gateway attempt lines = %v", attempts)
	}
	for _, secret := range []string{"gw-secret-token", "menu", importedStaffKey} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
}

// Every line logged while a push is served (each gateway attempt, the access line) carries the
// request's id and, the request being traced, the caller's trace id: one id finds them all.
func TestPushLogLinesCarryRequestAndTraceIDs(t *testing.T) {
	logs := &lockedBuffer{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
	const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	incoming := http.Header{"Traceparent": {"00-" + callerTrace + "-00f067aa0ba902b7-01"}}
	pushDemoTerminal(t, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), tp, incoming)
	var msgs []string
	requestIDs := map[any]bool{}
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m["msg"].(string))
		requestIDs[m["request_id"]] = true
		if id, _ := m["request_id"].(string); id == "" || m["trace_id"] != callerTrace {
			t.Errorf("line without the request's ids: %s", sc.Bytes())
		}
	}
	if diff := cmp.Diff([]string{"gateway attempt", "gateway attempt", "request"}, msgs); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if len(requestIDs) != 1 {
		t.Errorf("one request's lines carry %d request ids", len(requestIDs))
	}
}

// The spans of a push with one retry: the request's, one per store call and one per gateway
// attempt, all in the caller's trace, with the traceparent of each attempt sent to the gateway,
// and nothing that identifies a person, a record or a key.
func TestPushTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	incoming := http.Header{"Traceparent": {"00-" + callerTrace + "-00f067aa0ba902b7-01"}}
	gw := pushDemoTerminal(t, slog.New(slog.DiscardHandler), tp, incoming)
	spans := exp.GetSpans()

	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	const route = "POST /v1/crm/deployment-orders/{orderId}/line-items/{lineItemId}/device-parameters"
	attempt := "PUT /v1/terminals/{terminalId}/parameters"
	want := []string{ // in the order they ended
		"store.Credential", "store.PushSource", "store.AcquirePushLease", "store.BeginPush",
		"store.CountPushAttempt", attempt, "store.CountPushAttempt", attempt, "store.FinishPush", "store.ReleasePushLease", route,
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("spans (-want +got):\n%s", diff)
	}

	request := spans[len(spans)-1]
	if request.SpanKind != trace.SpanKindServer || request.SpanContext.TraceID().String() != callerTrace ||
		request.Parent.SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("request span %v %v under %v: want a server span continuing the caller's trace", request.SpanKind, request.SpanContext, request.Parent)
	}
	wantAttrs := map[string]any{"http.request.method": "POST", "http.response.status_code": int64(200),
		"http.route": "/v1/crm/deployment-orders/{orderId}/line-items/{lineItemId}/device-parameters"}
	if diff := cmp.Diff(wantAttrs, attrMap(request.Attributes)); diff != "" {
		t.Errorf("request span attributes (-want +got):\n%s", diff)
	}
	for _, s := range spans[:len(spans)-1] {
		if s.Parent.SpanID() != request.SpanContext.SpanID() {
			t.Errorf("span %s is not a child of the request span", s.Name)
		}
	}

	// Attempt spans: numbered, with the gateway's status, and their traceparent reached it.
	got := gw.received()
	// The gateway attempts, each after its CountPushAttempt.
	for i, s := range []tracetest.SpanStub{spans[5], spans[7]} {
		a := attrMap(s.Attributes)
		status := []int64{503, 200}[i]
		if a["gateway.attempt"] != int64(i+1) || a["http.response.status_code"] != status {
			t.Errorf("attempt span %d attributes %v", i+1, a)
		}
		traceparent := "00-" + callerTrace + "-" + s.SpanContext.SpanID().String() + "-01"
		if tpHeader := got[i].Get("Traceparent"); tpHeader != traceparent {
			t.Errorf("attempt %d sent traceparent %q, want %q", i+1, tpHeader, traceparent)
		}
	}
	if a := attrMap(spans[0].Attributes); a["db.system.name"] != "sqlite" || a["db.operation.name"] != "Credential" {
		t.Errorf("store span attributes %v", a)
	}

	// Nothing personal or secret, and no raw path, in any span.
	for _, s := range spans {
		for _, kv := range s.Attributes {
			v := kv.Value.String()
			for _, banned := range []string{string(demoOrder), string(demoLineItem), importedStaffKey, demoTerminalID, "gw-secret-token", "/v1/crm/deployment-orders/0"} {
				if strings.Contains(v, banned) {
					t.Errorf("span %s attribute %s = %q holds %q", s.Name, kv.Key, v, banned)
				}
			}
		}
	}
}

func attrMap(kvs []attribute.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

// Every store call of the other operations (the push's are above) and of the audit list gets its
// span too, named after the method.
func TestStoreSpansOfEachOperation(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	ring := testdb.Ring(t, "k1")
	importDataset(t, st, importableDemo(time.Now().UTC()), ring)
	exp := tracetest.NewInMemoryExporter()
	srv := httptest.NewServer(newHandler(Config{}, st, ring, slog.New(slog.DiscardHandler), nil,
		sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))))
	defer srv.Close()
	ops := []struct {
		method, path string
		want         []string
	}{
		{http.MethodGet, "/v1/crm/sam-action-logs/" + string(demoLead), []string{"store.Credential", "store.ListVisibleSAMActionLogs"}},
		{http.MethodGet, "/v1/crm/leads/" + string(demoLead) + "/service-acceptance", []string{"store.Credential", "store.ServiceAcceptance"}},
		{http.MethodGet, "/v1/crm/leads/" + string(demoLead) + "/principals/" + string(demoPrincipal) + "/decrypt/ssn",
			[]string{"store.Credential", "store.PrincipalSSN", "store.RecordAudit"}},
		{http.MethodDelete, "/v1/crm/merchants/" + string(demoMerchant) + "/documents/" + string(demoDocument),
			[]string{"store.Credential", "store.DeleteMerchantDocument"}},
		{http.MethodGet, "/v1/audit-events", []string{"store.Credential", "store.ListAuditEvents", "store.RecordAudit"}},
	}
	for _, op := range ops {
		exp.Reset()
		req, _ := http.NewRequest(op.method, srv.URL+op.path, nil)
		req.Header.Set("Authorization", "Api-Key "+importedStaffKey)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d", op.method, op.path, resp.StatusCode)
		}
		var names []string
		for _, s := range exp.GetSpans() {
			if strings.HasPrefix(s.Name, "store.") {
				names = append(names, s.Name)
			}
		}
		if diff := cmp.Diff(op.want, names); diff != "" {
			t.Errorf("%s %s store spans (-want +got):\n%s", op.method, op.path, diff)
		}
	}
}

// The traced store's spans name the database system as OpenTelemetry's conventions spell it, on
// each engine: the engine says which system it is, and nothing here compares its name.
func TestTracedStoreNamesEachEngine(t *testing.T) {
	want := map[string]attribute.KeyValue{"sqlite": semconv.DBSystemNameSQLite, "postgres": semconv.DBSystemNamePostgreSQL}
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			st := testdb.Open(t, engine)
			got, want := newTracedStore(st, sdktrace.NewTracerProvider()).system, want[st.Engine()]
			if got.Key != want.Key || got.Value.AsString() != want.Value.AsString() {
				t.Errorf("the store's spans say %s=%q, want %s=%q", got.Key, got.Value.AsString(), want.Key, want.Value.AsString())
			}
		})
	}
}
