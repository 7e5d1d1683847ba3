package gateway

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	mathrand "math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"backoffice/internal/pause"
)

// maxSimBody caps what the simulator accepts as one terminal's parameters.
const maxSimBody = 1 << 20

// SimOptions configures a Simulator.
type SimOptions struct {
	// Token, if set, is the bearer token every request must carry.
	Token string
	// FailureRate is the fraction of PUTs, 0 to 1, answered 503, so that
	// the client's retries can be watched.
	FailureRate float64
	// Latency delays every request, so that timeouts can be watched.
	Latency time.Duration
	// Rand returns a number in [0, 1) to decide failures; nil means
	// math/rand/v2.
	Rand func() float64
}

// Simulator is an in-memory gateway speaking the protocol of
// docs/device-parameters.md. It keeps the last parameters pushed per terminal.
type Simulator struct {
	opts SimOptions
	mux  *http.ServeMux

	mu      sync.Mutex
	params  map[string]json.RawMessage // by terminal id
	pushIDs map[string]string          // by Idempotency-Key
	keys    []string                   // the Idempotency-Key of every push taken, in order
}

// NewSimulator returns a Simulator; serve it with any http.Server.
func NewSimulator(opts SimOptions) *Simulator {
	if opts.Rand == nil {
		opts.Rand = mathrand.Float64
	}
	s := &Simulator{
		opts:    opts,
		mux:     http.NewServeMux(),
		params:  make(map[string]json.RawMessage),
		pushIDs: make(map[string]string),
	}
	// ServeMux matches wildcards on the escaped path and unescapes the
	// value, so an id sent as "a%2Fb" arrives in PathValue as "a/b".
	s.mux.HandleFunc("PUT /v1/terminals/{terminalId}/parameters", s.handlePut)
	s.mux.HandleFunc("GET /v1/terminals/{terminalId}/parameters", s.handleGet)
	return s
}

func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.wait(r) {
		return
	}
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", "Bearer")
		writeMessage(w, http.StatusUnauthorized, "missing or wrong bearer token")
		return
	}
	s.mux.ServeHTTP(w, r)
}

// Last returns the parameters last stored for terminalID.
func (s *Simulator) Last(terminalID string) (json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.params[terminalID]
	return append(json.RawMessage(nil), p...), ok
}

func (s *Simulator) handlePut(w http.ResponseWriter, r *http.Request) {
	if s.opts.Rand() < s.opts.FailureRate {
		writeMessage(w, http.StatusServiceUnavailable, "simulated failure")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSimBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeMessage(w, http.StatusRequestEntityTooLarge, "parameters larger than 1 MiB")
		return
	case err != nil:
		writeMessage(w, http.StatusBadRequest, "could not read the body")
		return
	case !json.Valid(body):
		writeMessage(w, http.StatusBadRequest, "body must be JSON")
		return
	}
	id := s.store(r.PathValue("terminalId"), r.Header.Get("Idempotency-Key"), body)
	writeJSON(w, http.StatusOK, map[string]string{"pushId": id})
}

// store keeps the parameters and returns the push id. A retry carrying an
// Idempotency-Key already seen gets the same id back, as from a real gateway.
func (s *Simulator) store(terminalID, key string, params []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.params[terminalID] = params
	s.keys = append(s.keys, key)
	if id, ok := s.pushIDs[key]; ok && key != "" {
		return id
	}
	id := rand.Text()
	if key != "" {
		s.pushIDs[key] = id
	}
	return id
}

// Keys returns the Idempotency-Key of every push the simulator took, in order.
func (s *Simulator) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

func (s *Simulator) handleGet(w http.ResponseWriter, r *http.Request) {
	params, ok := s.Last(r.PathValue("terminalId"))
	if !ok {
		writeMessage(w, http.StatusNotFound, "no parameters pushed for this terminal")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(params)
}

// wait applies the configured latency. It reports false when the client
// gave up first, leaving nobody to answer.
func (s *Simulator) wait(r *http.Request) bool {
	if s.opts.Latency <= 0 {
		return true
	}
	return pause.For(r.Context(), s.opts.Latency) == nil
}

func (s *Simulator) authorized(r *http.Request) bool {
	if s.opts.Token == "" {
		return true
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "Bearer") &&
		subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), []byte(s.opts.Token)) == 1
}

func writeMessage(w http.ResponseWriter, code int, message string) {
	writeJSON(w, code, map[string]string{"message": message})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
