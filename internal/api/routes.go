// Package api is the HTTP interface of the back office: the five operations of the contract and
// the audit list, the error body, pagination, and the middleware around them.
package api

import (
	"bytes"
	"context"
	_ "embed"
	"log/slog"
	"net/http"
	"path"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"

	"backoffice/internal/auth"
	"backoffice/internal/reqlog"
	"backoffice/internal/secrets"
)

//go:embed openapi.yaml
var openAPIDocument []byte

// OpenAPIDocument is the contract's machine form, as GET /openapi.yaml serves it: a copy, so that
// nothing outside the package can change what is served.
func OpenAPIDocument() []byte { return bytes.Clone(openAPIDocument) }

// Store is everything the handlers read and write.
type Store interface {
	auth.Lookup
	auth.Accounts
	SAMLogStore
	AcceptanceStore
	DecryptStore
	DocumentStore
	PushKeyStore
	AuditStore
}

// Deps are the handlers' dependencies.
type Deps struct {
	Store  Store
	Ring   secrets.Opener
	Pusher Pusher
	Logger *slog.Logger
	Now    func() time.Time
	// Health is what GET /readyz checks; nil means Store, when it can answer (*store.Store can).
	Health Health
	// Metrics observes requests and decrypts; nil observes nothing.
	Metrics Observer
	// Limits bounds callers; the zero value limits nothing.
	Limits Limits
	// Extra registers further routes (metrics) on the same mux, so they share the middleware and
	// the error handling.
	Extra func(mux *http.ServeMux)
	// Tracer, when set, gets a span per request; nil (tracing off) makes none.
	Tracer trace.TracerProvider
	// CORSOrigins are the origins (scheme://host[:port]) whose pages may call the operations
	// from a browser; empty turns CORS off.
	CORSOrigins []string
	// Tokens, when set, accepts the identity provider's access tokens as Bearer credentials
	// (internal/oauth); nil accepts session tokens alone.
	Tokens auth.Tokens
	// Checkpoints holds the audit log's latest signed checkpoint; nil: none is served (404), and
	// no proof (409 not_checkpointed).
	Checkpoints CheckpointSource
	// Witnesses, when set, is how far the witnesses' cosignatures are behind the checkpoints,
	// which /readyz shows; nil: no witnesses are configured.
	Witnesses WitnessStatus
	// AuditLog serves the trail's tiles and its proofs; nil means Store when it can answer.
	// Without one, those routes are not served.
	AuditLog AuditLog
}

// Observer receives what the service measures; internal/metrics implements it with Prometheus.
// Labels are bounded: a route pattern (never a raw path), a known method, a status, an outcome.
type Observer interface {
	ObserveRequest(method, route string, status int, elapsed time.Duration)
	ObserveDecrypt(outcome string)
}

type noObserver struct{}

func (noObserver) ObserveRequest(string, string, int, time.Duration) {}
func (noObserver) ObserveDecrypt(string)                             {}

const (
	// maxBodyBytes caps request bodies; no operation of the contract takes one.
	maxBodyBytes = 1 << 20
	// maxHeaderBytes caps the request line and headers with the error body. The server's own
	// MaxHeaderBytes (larger) is the hard cap that protects memory before any handler runs.
	maxHeaderBytes = 32 << 10
)

const decryptRoute = "/v1/crm/leads/{leadId}/principals/{principalId}/decrypt/{field}"

// New returns the service's handler: every route, registered here and only here.
func New(d Deps) http.Handler {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Metrics == nil {
		d.Metrics = noObserver{}
	}
	if d.Health == nil {
		d.Health, _ = d.Store.(Health)
	}
	if d.AuditLog == nil {
		d.AuditLog, _ = d.Store.(AuditLog)
	}
	// Every line this package logs carries the request's id (and trace id): from the context the
	// line is logged with.
	log := reqlog.Wrap(d.Logger)
	var tokens []auth.Option
	if d.Tokens != nil {
		tokens = append(tokens, auth.WithTokens(d.Tokens, d.Store))
	}
	a := auth.New(d.Store, d.Now, tokens...)
	g := newGuard(d.Limits)
	withAuth := func(h handlerFunc) http.Handler { return authenticated(a, g, log, h) }
	mux := http.NewServeMux()
	// The operations a page of another origin may call, when CORS is configured.
	c := newCORS(d.CORSOrigins)
	c.route(mux, "POST /v1/crm/deployment-orders/{orderId}/line-items/{lineItemId}/device-parameters", withAuth(handlePush(d.Pusher, d.Store, d.Now, log)))
	c.route(mux, "GET /v1/crm/sam-action-logs/{entityId}", withAuth(handleListSAMActionLogs(d.Store, newSAMPageBodies())))
	c.route(mux, "GET /v1/crm/leads/{leadId}/service-acceptance", withAuth(handleServiceAcceptance(d.Store, newAcceptanceBodies())))
	// The mux lets HEAD match a GET pattern: a HEAD of decrypt would decrypt and be audited for an
	// answer without a body. Decrypt answers GET alone; the method-less pattern takes the rest.
	c.route(mux, "GET "+decryptRoute, onlyGET(withAuth(handleDecrypt(d.Store, d.Ring, d.Now, d.Metrics, log))))
	mux.Handle(decryptRoute, allowOnly(http.MethodGet))
	c.route(mux, "DELETE /v1/crm/merchants/{merchantId}/documents/{documentId}", withAuth(handleDeleteDocument(d.Store, d.Now)))
	c.route(mux, "GET /v1/audit-events", withAuth(handleListAuditEvents(d.Store, d.Now)))
	c.route(mux, auditCheckpointRoute, withAuth(handleAuditCheckpoint(d.Checkpoints)))
	auditLogRoutes(mux, withAuth, d.Store, d.AuditLog, d.Checkpoints, d.Now)
	mux.HandleFunc("GET /openapi.yaml", serveOpenAPI)
	mux.HandleFunc("GET /docs", serveDocs("redoc/index.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /docs/redoc.standalone.js", serveDocs("redoc/redoc.standalone.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /healthz", handleHealthz)
	mux.Handle("GET /readyz", handleReadyz(d.Health, d.Witnesses, log))
	if d.Extra != nil {
		d.Extra(mux)
	}
	r := &router{mux: mux, cors: c}
	var tracer trace.Tracer
	if d.Tracer != nil {
		tracer = d.Tracer.Tracer(tracerName)
	}
	return observe(log, d.Metrics, tracer, recoverPanics(log, limitRequest(maxHeaderBytes, maxBodyBytes, r)))
}

// Health is what readiness checks: the database answers, its schema is current, it takes a
// write, and the audit trail's tables are what the migrations made (TrailCatalogHeld: what the
// last check of them found, nil while it found nothing).
type Health interface {
	Ping(ctx context.Context) error
	Pending(ctx context.Context) (int, error)
	Writable(ctx context.Context) error
	TrailCatalogHeld() error
}

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(openAPIDocument)
}

// router gives the mux's own answers (unknown route, wrong method) the error body.
type router struct {
	mux  *http.ServeMux
	cors *cors
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The mux would redirect a path that is not clean (//, /./, /../), with an HTML body, for
	// every method; a client of a JSON API gets nothing from a redirect but a second request.
	if p := r.URL.EscapedPath(); p != cleanPath(p) {
		writeErrorBody(w, http.StatusNotFound, "not_found", "no such route: the path is not in canonical form (no //, /./ or /../)")
		return
	}
	if rt.cors.preflight(w, r, rt.mux) {
		return
	}
	// The route is matched once, by the mux. When none matches, the mux decides between 404 and
	// 405 (and computes Allow) and writes its own plain-text answer: muxWriter keeps that from the
	// client, and it is answered in our shape.
	mw := &muxWriter{ResponseWriter: w, r: r}
	rt.mux.ServeHTTP(mw, r)
	switch {
	case mw.own == nil:
	case mw.own.status == http.StatusMethodNotAllowed:
		methodNotAllowed(w, r, mw.own.header.Get("Allow"))
	default:
		writeErrorBody(w, http.StatusNotFound, "not_found", "no such route")
	}
}

// muxWriter passes on what a route's handler writes, and keeps in own what the mux writes itself
// when no route matched. The mux sets the request's Pattern before it calls any handler and leaves
// it empty exactly when it answers itself (404, 405): the paths it would redirect with no pattern,
// the unclean ones, the router has already answered.
type muxWriter struct {
	http.ResponseWriter
	r   *http.Request
	own *headerProbe
}

// target is where a write goes: the client, or own when it is the mux's own answer.
func (w *muxWriter) target() http.ResponseWriter {
	if w.r.Pattern != "" {
		return w.ResponseWriter
	}
	if w.own == nil {
		w.own = &headerProbe{header: http.Header{}}
	}
	return w.own
}

func (w *muxWriter) Header() http.Header         { return w.target().Header() }
func (w *muxWriter) WriteHeader(status int)      { w.target().WriteHeader(status) }
func (w *muxWriter) Write(b []byte) (int, error) { return w.target().Write(b) }
func (w *muxWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// bounded is s cut to at most n bytes (a client's text echoed in an error).
func bounded(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	writeErrorBody(w, http.StatusMethodNotAllowed, "method_not_allowed", "method "+strconv.Quote(bounded(r.Method, 32))+" is not allowed here; allowed: "+allow)
}

// allowOnly answers 405 to every request it gets: a method-less pattern registered beside the
// patterns of its path's methods gets every other method.
func allowOnly(allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { methodNotAllowed(w, r, allow) })
}

// onlyGET answers 405 to every method but GET, HEAD included, before next runs.
func onlyGET(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			methodNotAllowed(w, r, http.MethodGet)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// cleanPath is the canonical form of a path the way the mux computes it (net/http's cleanPath):
// path.Clean, keeping a trailing slash.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// headerProbe records what the mux would answer, and discards the body.
type headerProbe struct {
	header http.Header
	status int
}

func (p *headerProbe) Header() http.Header { return p.header }
func (p *headerProbe) WriteHeader(s int) {
	if p.status == 0 {
		p.status = s
	}
}
func (p *headerProbe) Write(b []byte) (int, error) { p.WriteHeader(http.StatusOK); return len(b), nil }
