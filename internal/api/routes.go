// Package api is the HTTP interface of the back office: the five operations of the contract, its
// error body, its pagination, and the middleware around them.
package api

import (
	_ "embed"
	"log/slog"
	"net/http"
	"time"

	"backoffice/internal/auth"
)

//go:embed openapi.yaml
var OpenAPIDocument []byte

// Store is everything the handlers read and write.
type Store interface {
	auth.Lookup
	SAMLogStore
	AcceptanceStore
	DecryptStore
	DocumentStore
}

// Deps are the handlers' dependencies.
type Deps struct {
	Store  Store
	Ring   Opener
	Pusher Pusher
	Logger *slog.Logger
	Now    func() time.Time
	// Extra registers further routes (health, metrics) on the same mux, so they share the
	// middleware and the error handling.
	Extra func(mux *http.ServeMux)
}

// maxBodyBytes caps request bodies; no operation of the contract takes one.
const maxBodyBytes = 1 << 20

// New returns the service's handler: every route, registered here and only here.
func New(d Deps) http.Handler {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	a := auth.New(d.Store)
	mux := http.NewServeMux()
	mux.Handle("POST /v1/crm/deployment-orders/{orderId}/line-items/{lineItemId}/device-parameters", authenticated(a, handlePush(d.Pusher)))
	mux.Handle("GET /v1/crm/sam-action-logs/{entityId}", authenticated(a, handleListSAMActionLogs(d.Store)))
	mux.Handle("GET /v1/crm/leads/{leadId}/service-acceptance", authenticated(a, handleServiceAcceptance(d.Store)))
	mux.Handle("GET /v1/crm/leads/{leadId}/principals/{principalId}/decrypt/{field}", authenticated(a, handleDecrypt(d.Store, d.Ring, d.Now)))
	mux.Handle("DELETE /v1/crm/merchants/{merchantId}/documents/{documentId}", authenticated(a, handleDeleteDocument(d.Store, d.Now)))
	mux.HandleFunc("GET /openapi.yaml", serveOpenAPI)
	if d.Extra != nil {
		d.Extra(mux)
	}
	r := &router{mux: mux}
	return observe(d.Logger, r.pattern, recoverPanics(limitBody(maxBodyBytes, r)))
}

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(OpenAPIDocument)
}

// router gives the mux's own answers (unknown route, wrong method) the error body.
type router struct {
	mux *http.ServeMux
}

func (rt *router) pattern(r *http.Request) string {
	if _, p := rt.mux.Handler(r); p != "" {
		return p
	}
	return "unmatched"
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, p := rt.mux.Handler(r); p != "" {
		rt.mux.ServeHTTP(w, r)
		return
	}
	// Let the mux decide between 404 and 405 (and compute Allow), then answer in our shape.
	probe := &headerProbe{header: http.Header{}}
	rt.mux.ServeHTTP(probe, r)
	if probe.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", probe.header.Get("Allow"))
		writeErrorBody(w, http.StatusMethodNotAllowed, "method_not_allowed", "method "+r.Method+" is not allowed here; allowed: "+probe.header.Get("Allow"))
		return
	}
	writeErrorBody(w, http.StatusNotFound, "not_found", "no such route")
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
