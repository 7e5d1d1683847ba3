package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"backoffice/internal/auth"
	"backoffice/internal/domain"
	"backoffice/internal/reqlog"
)

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	var h [16]byte
	hex.Encode(h[:], b[:])
	return string(h[:])
}

// statusWriter remembers the status a handler wrote, for the access log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe gives each request an id in its context, which every line logged with that context
// carries (reqlog), logs one line per request with the route pattern (never the raw path: it
// holds ids) and the outcome, and hands the same to the metrics. It never logs headers or
// bodies. Probes and scrapes log at debug level only. log is the service's logger, made by
// reqlog.Wrap, as every logger of this package is: log with its *Context methods and the
// request's context, and the line carries the request's id (and trace id).
func observe(log *slog.Logger, m Observer, tracer trace.Tracer, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := newRequestID()
		w.Header()["X-Request-Id"] = []string{id}
		ctx, span := startRequestSpan(tracer, r)
		r = r.WithContext(reqlog.WithID(ctx, id))
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		end := time.Now()
		elapsed := end.Sub(start)
		// The mux has set the pattern on this very request; unknown routes have none.
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		method := knownMethod(r.Method)
		m.ObserveRequest(method, route, sw.status, elapsed)
		endRequestSpan(span, method, route, sw.status)
		level := slog.LevelInfo
		if quietRoutes[route] {
			level = slog.LevelDebug
		}
		accessLine(r.Context(), log.Handler(), level, end, method, route, sw.status, elapsed)
	})
}

// accessLine logs a request's line through h, log's handler, as Logger.LogAttrs would but
// without its runtime.Callers on each request: the line's source is always this function, and
// no handler of the service logs sources.
func accessLine(ctx context.Context, h slog.Handler, level slog.Level, at time.Time, method, route string, status int, elapsed time.Duration) {
	if !h.Enabled(ctx, level) {
		return
	}
	rec := slog.NewRecord(at, level, "request", 0)
	rec.AddAttrs(
		slog.String("method", method),
		slog.String("route", route),
		slog.Int("status", status),
		slog.Float64("duration_ms", milliseconds(elapsed)))
	_ = h.Handle(ctx, rec) // a Logger ignores its handler's errors too: a log write that fails is not the request's
}

// milliseconds is d for logs, which carry durations in milliseconds with the unit in the key.
func milliseconds(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// quietRoutes are polled by machines every few seconds: their lines would drown the others.
var quietRoutes = map[string]bool{"GET /healthz": true, "GET /readyz": true, "GET /metrics": true}

// knownMethod keeps a client-chosen method from becoming an unbounded log field or metric label.
func knownMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// recoverPanics turns a panic into a 500 with the error body; the panic value goes to the log.
func recoverPanics(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			log.ErrorContext(r.Context(), "panic", slog.Any("panic", p))
			writeErrorBody(w, http.StatusInternalServerError, "internal", "the service failed to handle this request; it has been logged")
		}()
		next.ServeHTTP(w, r)
	})
}

// limitRequest answers oversized requests before any handler runs: 431 when the request line and
// headers exceed maxHeader bytes, 413 when the body exceeds maxBody, whether its length is
// declared or it comes chunked. No operation here takes a body, so anything large is abuse.
func limitRequest(maxHeader int, maxBody int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if headerSize(r) > maxHeader {
			writeErrorBody(w, http.StatusRequestHeaderFieldsTooLarge, "header_too_large",
				fmt.Sprintf("the request line and headers exceed %d bytes", maxHeader))
			return
		}
		switch {
		case r.Body == nil || r.Body == http.NoBody:
			// Nothing to read (the server's body of a request without one): nothing to bound.
		case r.ContentLength > maxBody:
			payloadTooLarge(w, maxBody)
			return
		case r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody:
			// Chunked: the size is known only by reading. Read up to one byte past the cap.
			b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
			if int64(len(b)) > maxBody {
				payloadTooLarge(w, maxBody)
				return
			}
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), errReader{err}))
		default:
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		}
		next.ServeHTTP(w, r)
	})
}

func payloadTooLarge(w http.ResponseWriter, max int64) {
	// The unread rest of the body would have to be drained; closing is cheaper and safer.
	w.Header().Set("Connection", "close")
	writeErrorBody(w, http.StatusRequestEntityTooLarge, "payload_too_large",
		fmt.Sprintf("the request body exceeds %d bytes", max))
}

// errReader ends a pre-read body with the error reading it met, if any.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}

// headerSize approximates the request's head as sent: request line and header lines.
func headerSize(r *http.Request) int {
	n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + 4 + len(r.Host) + 8
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// handlerFunc is a handler that returns its error instead of writing it. actor is who the
// request's credential speaks for.
type handlerFunc func(w http.ResponseWriter, r *http.Request, actor domain.Actor) error

// authenticated checks the Authorization header and the caller's limits before the handler
// runs, and renders the handler's error. In order: an address locked by its failures answers 429
// to every credential that has not succeeded from it before, valid or not, without a lookup; a
// credential over its rate is refused (before the lookup when its bucket is known to be empty);
// the credential is looked up; a failed authentication spends a token of its address (once the
// address has none left it is locked); a valid one is remembered as known at its address, so that
// a lock its neighbours' guesses cause (a NAT, an office) does not stop it.
func authenticated(a *auth.Authenticator, g *guard, log *slog.Logger, h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		attempt := auth.NewAttempt(soleAuthorization(r.Header))
		var addr string
		if g.failures != nil {
			addr = g.clientAddr(r)
			if d, locked := g.lockedOut(addr, attempt); locked {
				rateLimited(w, g.failurePolicy, d, failedAuthDetail)
				return
			}
		}
		var key string
		if g.credentials != nil && attempt.Valid() {
			key = string(attempt.Hash)
			if d := g.credentials.Check(key); !d.Allowed {
				rateLimited(w, g.credentialPolicy, d, "this credential is over its request rate")
				return
			}
		}
		actor, err := a.Verify(ctx, attempt)
		if err != nil {
			if g.failures != nil && auth.Failed(err) {
				if d := g.failures.Allow(addr); !d.Allowed {
					rateLimited(w, g.failurePolicy, d, failedAuthDetail)
					return
				}
			}
			writeError(log, w, r, err)
			return
		}
		if g.failures != nil {
			g.known.Remember(addr, string(attempt.Hash))
		}
		if g.credentials != nil {
			d := g.credentials.Allow(key)
			if !d.Allowed {
				rateLimited(w, g.credentialPolicy, d, "this credential is over its request rate")
				return
			}
			setRateHeaders(w.Header(), g.credentialPolicy, d)
		}
		if err := h(w, r, actor); err != nil {
			writeError(log, w, r, err)
		}
	})
}

// soleAuthorization is the request's one Authorization header, or "" (refused as no credential)
// when it has several: judging by one of them would let a proxy and the service disagree on who
// is calling.
func soleAuthorization(h http.Header) string {
	if vs := h["Authorization"]; len(vs) == 1 {
		return vs[0]
	}
	return ""
}

// require checks a permission: 403 when the actor lacks it.
func require(a domain.Actor, p domain.Permission) error {
	if a.Can(p) {
		return nil
	}
	return domain.Errorf(domain.KindForbidden, "forbidden", "this user lacks the %s permission", p)
}

// isNotFound tells the store's not-found sentinel.
func isNotFound(err error) bool { return errors.Is(err, domain.ErrNotFound) }
