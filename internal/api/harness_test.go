package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"backoffice/internal/api"
	"backoffice/internal/dataset"
	"backoffice/internal/gateway"
	"backoffice/internal/jsonlog"
	"backoffice/internal/push"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// harness is the real router and middleware over a real store loaded with the fixture.
type harness struct {
	t       *testing.T
	st      *store.Store
	deps    api.Deps // what handler was made of
	handler http.Handler
	logs    *syncBuffer
	sim     *gateway.Simulator
}

// observedBy makes the harness's handler again, its requests and decrypts observed by o.
func (h *harness) observedBy(o api.Observer) {
	h.deps.Metrics = o
	h.handler = api.New(h.deps)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type harnessOption func(*push.Config)

// withoutGateway configures no gateway, as when BACKOFFICE_GATEWAY_URL is unset.
func withoutGateway(c *push.Config) { c.Gateway = nil }

func newHarness(t *testing.T, st *store.Store, opts ...harnessOption) *harness {
	t.Helper()
	return newHarnessOf(t, st, fixture(), opts...)
}

// newHarnessOf is a harness over another dataset than the fixture.
func newHarnessOf(t *testing.T, st *store.Store, ds *dataset.Dataset, opts ...harnessOption) *harness {
	t.Helper()
	ring := testdb.Ring(t)
	if _, err := dataset.Import(context.Background(), st, ds, ring); err != nil {
		t.Fatalf("import dataset: %v", err)
	}
	h := &harness{t: t, st: st, logs: &syncBuffer{}, sim: gateway.NewSimulator(gateway.SimOptions{Token: "gw-token"})}
	gw := httptest.NewServer(h.sim)
	t.Cleanup(gw.Close)
	log := slog.New(jsonlog.New(h.logs, slog.LevelInfo))
	cfg := push.Config{Store: st, Gateway: gateway.New(gateway.Config{BaseURL: gw.URL, Token: "gw-token", Timeout: 2 * time.Second}),
		Budget: 2 * time.Second, Now: func() time.Time { return fixtureNow }, Logger: log}
	for _, o := range opts {
		o(&cfg)
	}
	h.deps = api.Deps{Store: st, Ring: ring, Pusher: push.New(cfg), Logger: log, Now: func() time.Time { return fixtureNow }}
	h.handler = api.New(h.deps)
	return h
}

// response is a recorded answer that has been checked against the OpenAPI document.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends a request through the handler and validates the answer against openapi.yaml.
func (h *harness) do(method, target, authorization string) response {
	h.t.Helper()
	req := httptest.NewRequest(method, target, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	h.handler.ServeHTTP(rec, req)
	res := recorded(req, rec)
	validate(h.t, req, res)
	return res
}

// recorded is the answer a client receives: a HEAD's body, which the recorder keeps, is dropped
// as the HTTP server drops it.
func recorded(req *http.Request, rec *httptest.ResponseRecorder) response {
	res := response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	if req.Method == http.MethodHead {
		res.Body = nil
	}
	return res
}

func (h *harness) get(target, key string) response {
	return h.do(http.MethodGet, target, "Api-Key "+key)
}

var (
	openapiOnce   sync.Once
	openapiRouter routers.Router
	openapiErr    error
)

func router(t testing.TB) routers.Router {
	openapiOnce.Do(func() {
		doc, err := strictDocument()
		if err != nil {
			openapiErr = err
			return
		}
		openapiRouter, openapiErr = gorillamux.NewRouter(doc)
	})
	if openapiErr != nil {
		t.Fatalf("openapi.yaml: %v", openapiErr)
	}
	return openapiRouter
}

// strictDocument is openapi.yaml closed for what this service sends. The document lets the
// contract grow: response objects may gain fields, the error codes are an open set, and every
// operation has a default response for statuses a later version may add, so that clients
// accept what they do not know. What the service sends today must still be exactly what the
// document lists: here every named object schema refuses properties it does not declare, every
// x-extensible-enum (the known codes) is an enum, and no operation has a default response, so an
// answer's status must be one its operation lists.
func strictDocument() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPIDocument())
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	closed := false
	for _, ref := range doc.Components.Schemas {
		if s := ref.Value; s.Type.Is("object") && len(s.Properties) > 0 {
			s.AdditionalProperties = openapi3.AdditionalProperties{Has: &closed}
		}
		closeEnums(ref.Value, map[*openapi3.Schema]bool{})
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			op.Responses.Delete("default")
		}
	}
	return doc, doc.Validate(context.Background())
}

// closeEnums makes the x-extensible-enum of s, and of the schemas within it, an enum.
func closeEnums(s *openapi3.Schema, seen map[*openapi3.Schema]bool) {
	if s == nil || seen[s] {
		return
	}
	seen[s] = true
	if known, ok := s.Extensions["x-extensible-enum"].([]any); ok {
		s.Enum = known
	}
	for _, ref := range s.AllOf {
		closeEnums(ref.Value, seen)
	}
	for _, ref := range s.Properties {
		closeEnums(ref.Value, seen)
	}
	if s.Items != nil {
		closeEnums(s.Items.Value, seen)
	}
}

// validate checks one response against the operation of the document that matches the request:
// its status, its headers (each one declared, the required ones present and well formed) and its
// body, read by kin-openapi and again by a JSON Schema validator (jsonschema_test.go). Answers to
// requests no operation describes (unknown routes, wrong methods) must still be the error body.
// Every answer accepted is kept for the ajv check of TestMain.
func validate(t testing.TB, req *http.Request, res response) {
	t.Helper()
	ct := res.Header.Get("Content-Type")
	switch {
	case res.Status == http.StatusNoContent || req.Method == http.MethodHead:
		if len(res.Body) != 0 {
			t.Errorf("%s %s: %d with a body: %q", req.Method, req.URL, res.Status, res.Body)
		}
	case tileBytes(req.URL.Path, res.Status):
		if ct != "application/octet-stream" {
			t.Errorf("%s %s: Content-Type %q, want application/octet-stream", req.Method, req.URL, ct)
		}
	case !strings.HasPrefix(ct, "application/json") && !notJSON(req.URL.Path):
		t.Errorf("%s %s: Content-Type %q, want application/json", req.Method, req.URL, ct)
	}
	route, params, err := router(t).FindRoute(req)
	if err != nil {
		if req.Method != http.MethodHead {
			checkErrorBody(t, req, res)
		}
		return
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}
	if notJSON(req.URL.Path) || tileBytes(req.URL.Path, res.Status) || req.Method == http.MethodHead {
		opts.ExcludeResponseBody = true
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts},
		Status:                 res.Status,
		Header:                 res.Header,
		Options:                opts,
	}
	in.SetBodyBytes(res.Body)
	accepted := true
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s -> %d does not match openapi.yaml: %v\nbody: %s", req.Method, req.URL, res.Status, err, res.Body)
		accepted = false
	}
	declared := route.Operation.Responses.Status(res.Status)
	if declared == nil {
		return // kin-openapi has said so
	}
	checkHeadersDeclared(t, req, res.Status, declared.Value.Headers, res.Header)
	if media := declared.Value.Content.Get("application/json"); media != nil && !opts.ExcludeResponseBody {
		if err := strictJSONSchemas(t).validateBody(media.Schema, res.Body); err != nil {
			t.Errorf("%s %s -> %d: the body fails the document's schema as JSON Schema: %v\nbody: %s", req.Method, req.URL, res.Status, err, res.Body)
			accepted = false
		}
		if accepted {
			// ajv must accept what these accepted (answers refused here are some tests' point).
			keepForAjv(route.Method+" "+route.Path, res.Status, media.Schema, res.Body)
		}
	}
	if res.Status >= 400 && req.Method != http.MethodHead {
		checkErrorBody(t, req, res)
	}
}

// notJSON tells the paths that serve documents, not JSON: the OpenAPI document, the reference
// page with its script, and the metrics.
func notJSON(path string) bool {
	return path == "/openapi.yaml" || path == "/v1/audit-log/checkpoint" || path == "/v1/audit-log/pruned" || path == "/docs" || path == "/docs/redoc.standalone.js" || path == "/metrics"
}

// tileBytes tells the answers that are a tile's bytes: a tile path's 200.
func tileBytes(path string, status int) bool {
	return strings.HasPrefix(path, "/v1/audit-log/tile/") && status == http.StatusOK
}

type errorBody struct {
	Status    int    `json:"status"`
	Code      string `json:"code"`
	Detail    string `json:"detail"`
	Parameter string `json:"parameter"`
}

func checkErrorBody(t testing.TB, req *http.Request, res response) {
	t.Helper()
	var e errorBody
	if err := decodeStrict(res.Body, &e); err != nil {
		t.Errorf("%s %s -> %d: not the error body: %v: %s", req.Method, req.URL, res.Status, err, res.Body)
		return
	}
	if e.Status != res.Status || e.Code == "" || e.Detail == "" {
		t.Errorf("%s %s -> %d: bad error body %+v", req.Method, req.URL, res.Status, e)
	}
	// A 400 names the parameter at fault, and only a 400 names one.
	if (e.Parameter != "") != (res.Status == http.StatusBadRequest) {
		t.Errorf("%s %s -> %d: parameter %q", req.Method, req.URL, res.Status, e.Parameter)
	}
}

// decodeStrict decodes JSON so that an undocumented field fails.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return io.ErrUnexpectedEOF
	}
	return nil
}

func (r response) decode(t testing.TB, v any) {
	t.Helper()
	if err := decodeStrict(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

func (r response) err(t testing.TB) errorBody {
	t.Helper()
	var e errorBody
	r.decode(t, &e)
	return e
}

// wantError asserts an error answer's status and code.
func wantError(t testing.TB, r response, status int, code string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body %s", r.Status, status, r.Body)
	}
	if e := r.err(t); e.Code != code {
		t.Fatalf("code %q, want %q; body %s", e.Code, code, r.Body)
	}
}

func forEachEngine(t *testing.T, fn func(t *testing.T, h *harness), opts ...harnessOption) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) { fn(t, newHarness(t, st, opts...)) })
}

// useGateway rebuilds the handler around another gateway simulator.
func (h *harness) useGateway(t *testing.T, sim *gateway.Simulator, token string, budget time.Duration) {
	t.Helper()
	h.useGatewayServedBy(t, sim, sim, token, budget)
}

// useGatewayServedBy is useGateway with the gateway's requests served by front, which hands
// them on to sim (holding them, say).
func (h *harness) useGatewayServedBy(t *testing.T, front http.Handler, sim *gateway.Simulator, token string, budget time.Duration) {
	t.Helper()
	srv := httptest.NewServer(front)
	t.Cleanup(srv.Close)
	log := slog.New(slog.NewJSONHandler(h.logs, nil))
	p := push.New(push.Config{Store: h.st, Gateway: gateway.New(gateway.Config{BaseURL: srv.URL, Token: token, Timeout: budget}),
		Budget: budget, Now: func() time.Time { return fixtureNow }, Logger: log})
	h.handler = api.New(api.Deps{Store: h.st, Ring: testdb.Ring(t), Pusher: p, Logger: log, Now: func() time.Time { return fixtureNow }})
	h.sim = sim
}

// The tests' copy of the document refuses what the served one lets grow: a field the document
// does not list, and a code it does not know. The served document accepts both.
func TestStrictDocumentRefusesTheUndocumented(t *testing.T) {
	strict, served := router(t), servedRouter(t)
	cases := map[string]struct {
		status int
		body   string
	}{
		"added field":  {http.StatusOK, `{"status":"ok","newField":1}`},
		"unknown code": {http.StatusNotFound, `{"status":404,"code":"gone_forever","detail":"gone"}`},
	}
	for name, c := range cases {
		req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		if c.status == http.StatusNotFound {
			req = httptest.NewRequest(http.MethodGet, "/v1/crm/leads/"+leadA.String()+"/service-acceptance", nil)
		}
		for _, r := range []struct {
			router routers.Router
			want   bool
		}{{strict, false}, {served, true}} {
			if got := validBody(t, r.router, req, c.status, c.body) == nil; got != r.want {
				t.Errorf("%s: valid %v, want %v", name, got, r.want)
			}
		}
	}
}

func servedRouter(t *testing.T) routers.Router {
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPIDocument())
	if err != nil {
		t.Fatal(err)
	}
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func validBody(t *testing.T, r routers.Router, req *http.Request, status int, body string) error {
	route, params, err := r.FindRoute(req)
	if err != nil {
		t.Fatal(err)
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts},
		Status:                 status, Header: http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"0123456789abcdef"}}, Options: opts,
	}
	in.SetBodyBytes([]byte(body))
	return openapi3filter.ValidateResponse(context.Background(), in)
}
