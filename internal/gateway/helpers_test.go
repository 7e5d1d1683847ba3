package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// handlerTransport serves requests with a handler in memory, on the calling
// goroutine. Under testing/synctest that makes a gateway that "hangs" (waits
// for its request's context) durably blocked, so fake time can run.
type handlerTransport struct{ handler http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	served := req.Clone(req.Context())
	served.RequestURI = req.URL.RequestURI()
	rec := httptest.NewRecorder()
	t.handler.ServeHTTP(rec, served)
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	return rec.Result(), nil
}

// recorder is a scripted gateway: it answers the i-th request with
// answers[i] (the last one repeating) and remembers what it received.
type recorder struct {
	answers []answer

	mu       sync.Mutex
	requests []received
}

type answer struct {
	status     int
	body       string
	retryAfter string
	hang       bool          // wait for the request's context instead of answering
	delay      time.Duration // answer this long after the request, unless its context ends first
}

type received struct {
	at             time.Time
	method         string
	escapedPath    string
	idempotencyKey string
	authorization  string
	contentType    string
	body           string
}

func (g *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Reading the body to its end is what lets net/http notice a client
	// that goes away, and cancel r.Context for a hanging answer.
	body, _ := io.ReadAll(r.Body)
	g.mu.Lock()
	g.requests = append(g.requests, received{
		at:             time.Now(),
		method:         r.Method,
		escapedPath:    r.URL.EscapedPath(),
		idempotencyKey: r.Header.Get("Idempotency-Key"),
		authorization:  r.Header.Get("Authorization"),
		contentType:    r.Header.Get("Content-Type"),
		body:           string(body),
	})
	a := g.answers[min(len(g.requests), len(g.answers))-1]
	g.mu.Unlock()

	if a.hang {
		<-r.Context().Done()
		return
	}
	if a.delay > 0 {
		select {
		case <-time.After(a.delay):
		case <-r.Context().Done():
			return
		}
	}
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	w.WriteHeader(a.status)
	w.Write([]byte(a.body))
}

func (g *recorder) received() []received {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]received(nil), g.requests...)
}

// fixedRand makes backoff delays predictable: half of each cap.
func fixedRand() float64 { return 0.5 }
