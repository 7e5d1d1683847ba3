package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"backoffice/internal/auth"
	"backoffice/internal/domain"
)

type ctxKey int

const (
	loggerKey ctxKey = iota
	actorKey
)

func loggerFrom(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

func actorFrom(ctx context.Context) domain.Actor {
	a, _ := ctx.Value(actorKey).(domain.Actor)
	return a
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
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

// observe gives each request an id and a logger that carries it, and logs one line per request
// with the route pattern (never the raw path: it holds ids) and the outcome. It never logs
// headers or bodies.
func observe(log *slog.Logger, pattern func(*http.Request) string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := newRequestID()
		w.Header().Set("X-Request-Id", id)
		reqLog := log.With(slog.String("request_id", id))
		r = r.WithContext(context.WithValue(r.Context(), loggerKey, reqLog))
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		reqLog.Info("request",
			slog.String("method", r.Method),
			slog.String("route", pattern(r)),
			slog.Int("status", sw.status),
			slog.Duration("duration", time.Since(start)))
	})
}

// recoverPanics turns a panic into a 500 with the error body; the panic value goes to the log.
func recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			loggerFrom(r.Context()).Error("panic", slog.Any("panic", p))
			writeErrorBody(w, http.StatusInternalServerError, "internal", "the service failed to handle this request; it has been logged")
		}()
		next.ServeHTTP(w, r)
	})
}

// limitBody caps request bodies: no operation here takes one, so anything large is abuse.
func limitBody(max int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, max)
		next.ServeHTTP(w, r)
	})
}

// handlerFunc is a handler that returns its error instead of writing it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// authenticated checks the Authorization header before the handler runs, and renders the
// handler's error.
func authenticated(a *auth.Authenticator, h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		actor, err := a.Authenticate(r.Context(), r.Header.Get("Authorization"))
		if err != nil {
			writeError(w, r, err)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), actorKey, actor))
		if err := h(w, r); err != nil {
			writeError(w, r, err)
		}
	})
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
