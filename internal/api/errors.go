package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"backoffice/internal/auth"
	"backoffice/internal/domain"
)

// statusOf is the one table from error kind to HTTP status.
var statusOf = map[domain.Kind]int{
	domain.KindInvalid:         http.StatusBadRequest,
	domain.KindUnauthenticated: http.StatusUnauthorized,
	domain.KindForbidden:       http.StatusForbidden,
	domain.KindNotFound:        http.StatusNotFound,
	domain.KindConflict:        http.StatusConflict,
	domain.KindBadGateway:      http.StatusBadGateway,
	domain.KindUnavailable:     http.StatusServiceUnavailable,
	domain.KindInternal:        http.StatusInternalServerError,
}

// errorBody is the one error shape of the contract. Parameter, on a 400, names the request
// parameter at fault; it is left out of the other answers.
type errorBody struct {
	Status    int    `json:"status"`
	Code      string `json:"code"`
	Detail    string `json:"detail"`
	Parameter string `json:"parameter,omitempty"`
}

// writeError renders err. Anything that is not an application error is our own fault: it is
// logged with the request id and answered with a generic 500 that reveals nothing.
func writeError(log *slog.Logger, w http.ResponseWriter, r *http.Request, err error) {
	if clientGone(r, err) {
		// Nobody reads this answer: the caller closed the connection (or gave up) while the
		// request waited. Not a failure of ours, so not logged as one; 499 as nginx logs it.
		log.InfoContext(r.Context(), "client went away", slog.Int("status", statusClientClosedRequest))
		w.WriteHeader(statusClientClosedRequest)
		return
	}
	e, ok := appError(err)
	if !ok || e.Kind == domain.KindInternal {
		log.ErrorContext(r.Context(), "request failed", slog.Int("status", http.StatusInternalServerError),
			slog.String("code", "internal"), slog.String("cause", err.Error()))
		writeErrorBody(w, http.StatusInternalServerError, "internal", "the service failed to handle this request; it has been logged")
		return
	}
	status := statusOf[e.Kind]
	if e.Err != nil {
		// A 5xx of our own (the database lost, say) is an error; the gateway's 502s and the
		// caller's 4xx are warnings.
		level, msg := slog.LevelWarn, "request refused"
		if status >= 500 && e.Kind != domain.KindBadGateway {
			level, msg = slog.LevelError, "request failed"
		}
		log.LogAttrs(r.Context(), level, msg, slog.Int("status", status),
			slog.String("code", e.Code), slog.String("cause", e.Err.Error()))
	}
	if e.Kind == domain.KindUnauthenticated {
		w.Header().Set("WWW-Authenticate", challenge(err))
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", retryAfterSeconds(e.RetryAfter))
	}
	writeJSON(w, status, errorBody{Status: status, Code: e.Code, Detail: e.Detail, Parameter: e.Parameter})
}

// challenge is the WWW-Authenticate value of a 401: the schemes the service accepts, and for a
// refused access token RFC 6750's error and its description (section 3), Bearer's parameters
// before the next scheme.
func challenge(err error) string {
	var te *auth.TokenError
	if !errors.As(err, &te) {
		return "Bearer, Api-Key"
	}
	return `Bearer error="invalid_token", error_description="` + quotable(te.Description) + `", Api-Key`
}

// quotable keeps to the characters RFC 6750 allows in error_description (printable ASCII but the
// double quote and the backslash): anything else becomes '?'.
func quotable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return '?'
		}
		return r
	}, s)
}

// statusClientClosedRequest is logged for a request whose caller left before its answer.
const statusClientClosedRequest = 499

// clientGone tells an error that is only the request's own context ending: the caller left.
func clientGone(r *http.Request, err error) bool {
	ctxErr := r.Context().Err()
	return ctxErr != nil && errors.Is(err, ctxErr)
}

// errDatabaseUnavailable answers a request that lost the database. It is checked before any
// other application error in the chain: an answer that could not be recorded (an audit event,
// say) must not pass for a final one.
var errDatabaseUnavailable = &domain.Error{Kind: domain.KindUnavailable, Code: "unavailable",
	Detail: "the database is unavailable; try again shortly"}

// appError finds the application error that answers err, if any.
func appError(err error) (*domain.Error, bool) {
	if errors.Is(err, domain.ErrUnavailable) {
		e := *errDatabaseUnavailable
		e.Err = err
		return &e, true
	}
	return domain.AsError(err)
}

// retryAfterSeconds is a Retry-After value: whole seconds rounded up, at least 1.
func retryAfterSeconds(d time.Duration) string {
	return strconv.FormatInt(max(wholeSeconds(d), 1), 10)
}

func writeErrorBody(w http.ResponseWriter, status int, code, detail string) {
	writeJSON(w, status, errorBody{Status: status, Code: code, Detail: detail})
}

// writeJSON encodes v before writing anything, so an encoding failure can still become a 500.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := encodeJSON(v)
	if err != nil {
		writeBody(w, http.StatusInternalServerError, []byte(`{"status":500,"code":"internal","detail":"the service failed to encode its response"}`+"\n"))
		return
	}
	writeBody(w, status, body)
}

// encodeJSON is v as writeJSON writes it, in bytes of its own.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // bodies are JSON, never HTML; keep "<" readable in details
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeBody writes an encoded JSON body.
func writeBody(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
