package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func startGateway(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestPushSuccess(t *testing.T) {
	gw := &recorder{answers: []answer{{status: 200, body: `{"pushId": "push-123"}`}}}
	srv := startGateway(t, gw)
	c := New(Config{BaseURL: srv.URL, Token: "s3cret"})

	res, err := c.Push(context.Background(), "T-1", map[string]any{"terminalId": "T-1", "menu": []string{"batch_close"}})
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	if diff := cmp.Diff(Result{PushID: "push-123", Attempts: 1}, res); diff != "" {
		t.Errorf("result mismatch (-want +got):\n%s", diff)
	}
	reqs := gw.received()
	if len(reqs) != 1 {
		t.Fatalf("gateway got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.method != http.MethodPut || r.escapedPath != "/v1/terminals/T-1/parameters" {
		t.Errorf("request = %s %s, want PUT /v1/terminals/T-1/parameters", r.method, r.escapedPath)
	}
	if r.authorization != "Bearer s3cret" {
		t.Errorf("Authorization = %q", r.authorization)
	}
	if r.contentType != "application/json" {
		t.Errorf("Content-Type = %q", r.contentType)
	}
	if len(r.idempotencyKey) < 16 {
		t.Errorf("Idempotency-Key = %q, want a long random value", r.idempotencyKey)
	}
	if want := `{"menu":["batch_close"],"terminalId":"T-1"}`; r.body != want {
		t.Errorf("body = %s, want %s", r.body, want)
	}
}

func TestPushWithoutTokenSendsNoAuthorization(t *testing.T) {
	gw := &recorder{answers: []answer{{status: 204}}}
	srv := startGateway(t, gw)
	if _, err := New(Config{BaseURL: srv.URL}).Push(context.Background(), "T-1", json.RawMessage(`{}`)); err != nil {
		t.Fatalf("Push: %v", err)
	}
	if got := gw.received()[0].authorization; got != "" {
		t.Errorf("Authorization = %q, want none", got)
	}
}

func TestPushIdempotencyKeyDiffersBetweenPushes(t *testing.T) {
	gw := &recorder{answers: []answer{{status: 200}}}
	c := New(Config{BaseURL: startGateway(t, gw).URL})
	for range 2 {
		if _, err := c.Push(context.Background(), "T-1", 1); err != nil {
			t.Fatal(err)
		}
	}
	if reqs := gw.received(); reqs[0].idempotencyKey == reqs[1].idempotencyKey {
		t.Errorf("two pushes shared the Idempotency-Key %q", reqs[0].idempotencyKey)
	}
}

func TestPushPathEscaping(t *testing.T) {
	ids := []string{
		"plain-42", "a/b", "with space", "what?now", "hash#1", "100%", "a%2Fb",
		".", "..", "../../admin", "a+b=c&d", "ünïcødé", "semi;colon", "colon:at@",
	}
	for _, base := range []string{"", "/gw", "/gw/"} {
		for _, id := range ids {
			t.Run(base+"|"+id, func(t *testing.T) {
				var gotID, gotEscaped string
				mux := http.NewServeMux()
				pattern := "PUT " + strings.TrimSuffix(base, "/") + "/v1/terminals/{id}/parameters"
				mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
					gotID, gotEscaped = r.PathValue("id"), r.URL.EscapedPath()
				})
				srv := startGateway(t, mux)
				_, err := New(Config{BaseURL: srv.URL + base}).Push(context.Background(), id, 1)
				if err != nil {
					t.Fatalf("Push: %v (escaped path %q)", err, gotEscaped)
				}
				if gotID != id {
					t.Errorf("gateway saw terminal id %q, want %q (escaped path %q)", gotID, id, gotEscaped)
				}
				prefix := strings.TrimSuffix(base, "/") + "/v1/terminals/"
				segment, ok := strings.CutPrefix(gotEscaped, prefix)
				segment, ok2 := strings.CutSuffix(segment, "/parameters")
				if !ok || !ok2 || strings.Contains(segment, "/") {
					t.Errorf("escaped path %q does not keep the id in one segment", gotEscaped)
				}
			})
		}
	}
}

func TestPushRejected(t *testing.T) {
	long := strings.Repeat("x", 150) + " " + strings.Repeat("y", 150)
	tests := []struct {
		name       string
		status     int
		body       string
		wantReason string
	}{
		{"JSON message", 400, `{"code": "bad_terminal", "message": "unknown terminal T-1"}`,
			"unknown terminal T-1"},
		{"text body", 404, "no such terminal\n", "no such terminal"},
		{"JSON without message falls back to text", 409, `{"error": "busy"}`, `{"error": "busy"}`},
		{"empty message falls back to text", 409, `{"message": " "}`, `{"message": " "}`},
		{"empty body", 403, "", "gateway answered 403 Forbidden"},
		{"unauthorized", 401, `{"message": "bad token"}`, "bad token"},
		{"cut to 200 characters", 422, long, long[:200]},
		{"long JSON message cut", 422, `{"message": "` + long + `"}`, long[:200]},
		{"control characters", 400, "bad\x1b[31m\tterminal\r\n\x00id\u202e!", "bad[31m terminal id!"},
		{"invalid UTF-8", 400, "caf\xc3\xa9 \xff\xfeok", "café ok"},
		{"multibyte cut on a character", 400, strings.Repeat("é", 300), strings.Repeat("é", 200)},
		{"token echoed back", 400, `{"message": "token s3cret-token is not valid"}`,
			"token [redacted] is not valid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gw := &recorder{answers: []answer{{status: tt.status, body: tt.body}}}
			c := New(Config{BaseURL: startGateway(t, gw).URL, Token: "s3cret-token"})
			_, err := c.Push(context.Background(), "T-1", 1)
			want := &Error{Kind: KindRejected, Reason: tt.wantReason, Attempts: 1, StatusCode: tt.status}
			if diff := cmp.Diff(want, asError(t, err)); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			if n := len(gw.received()); n != 1 {
				t.Errorf("gateway got %d requests, want exactly 1", n)
			}
			if strings.Contains(err.Error(), "s3cret-token") {
				t.Errorf("error %q contains the token", err)
			}
		})
	}
}

func TestPushRedirectIsRejectedAndNotFollowed(t *testing.T) {
	for _, status := range []int{301, 302, 303, 307, 308} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			var followed atomic.Int32
			elsewhere := startGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				followed.Add(1)
			}))
			gw := startGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, elsewhere.URL+"/steal", status)
			}))
			// A caller-supplied client that would follow redirects must not.
			c := New(Config{BaseURL: gw.URL, Token: "s3cret", HTTPClient: &http.Client{}})
			_, err := c.Push(context.Background(), "T-1", 1)
			want := &Error{Kind: KindRejected, Attempts: 1, StatusCode: status,
				Reason: fmt.Sprintf("gateway answered a redirect (%d)", status)}
			if diff := cmp.Diff(want, asError(t, err)); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			if n := followed.Load(); n != 0 {
				t.Errorf("redirect target got %d requests, want 0", n)
			}
		})
	}
}

func TestPushSuccessWithoutPushID(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
	}{
		{"text", 200, "OK"},
		{"no content", 204, ""},
		{"accepted, other JSON", 202, `{"status": "queued"}`},
		{"push id not a string", 200, `{"pushId": 42}`},
		{"JSON array", 200, `["p-1"]`},
		{"truncated JSON", 200, `{"pushId": "p-1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gw := &recorder{answers: []answer{{status: tt.status, body: tt.body}}}
			res, err := New(Config{BaseURL: startGateway(t, gw).URL}).Push(context.Background(), "T-1", 1)
			if err != nil {
				t.Fatalf("Push: %v", err)
			}
			if diff := cmp.Diff(Result{Attempts: 1}, res); diff != "" {
				t.Errorf("result mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPushPushIDIsCleaned(t *testing.T) {
	gw := &recorder{answers: []answer{{status: 200, body: `{"pushId": "p-1\u0007\n` + strings.Repeat("z", 300) + `"}`}}}
	res, err := New(Config{BaseURL: startGateway(t, gw).URL}).Push(context.Background(), "T-1", 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := "p-1 " + strings.Repeat("z", 196); res.PushID != want {
		t.Errorf("PushID = %q, want %q", res.PushID, want)
	}
}

// countingBody is an endless-looking body that counts what is read of it.
type countingBody struct {
	remaining int
	read      *int
	closed    *bool
	fill      byte
}

func (b *countingBody) Read(p []byte) (int, error) {
	if b.remaining == 0 {
		return 0, io.EOF
	}
	n := min(len(p), b.remaining)
	for i := range p[:n] {
		p[i] = b.fill
	}
	b.remaining -= n
	*b.read += n
	return n, nil
}

func (b *countingBody) Close() error { *b.closed = true; return nil }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestPushReadsAtMost64KiB(t *testing.T) {
	for _, status := range []int{200, 400} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			var read int
			var closed bool
			transport := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				return &http.Response{
					StatusCode: status,
					Header:     http.Header{},
					Body:       &countingBody{remaining: 1 << 20, read: &read, closed: &closed, fill: 'a'},
					Request:    r,
				}, nil
			})
			c := New(Config{BaseURL: "http://gateway.test", HTTPClient: &http.Client{Transport: transport}})
			res, err := c.Push(context.Background(), "T-1", 1)
			if status == 200 && (err != nil || res.PushID != "") {
				t.Errorf("Push = %+v, %v; want success without push id", res, err)
			}
			if status == 400 && asError(t, err).Reason != strings.Repeat("a", 200) {
				t.Errorf("reason = %q", asError(t, err).Reason)
			}
			if read > maxBody {
				t.Errorf("read %d bytes of a 1 MiB body, want at most %d", read, maxBody)
			}
			if !closed {
				t.Error("body not closed")
			}
		})
	}
}

func TestPushConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	const budget = 300 * time.Millisecond
	start := time.Now()
	_, err = New(Config{BaseURL: "http://" + addr, Timeout: budget}).Push(context.Background(), "T-1", 1)
	elapsed := time.Since(start)

	e := asError(t, err)
	if e.Kind != KindUnavailable || e.Attempts < 2 || e.Cause == nil {
		t.Errorf("error = %+v, want unavailable after several attempts, with a cause", e)
	}
	if elapsed > budget+time.Second {
		t.Errorf("gave up after %v, budget %v", elapsed, budget)
	}
}

func TestPushHangingGateway(t *testing.T) {
	gw := &recorder{answers: []answer{{hang: true}}}
	srv := startGateway(t, gw)
	const budget = 300 * time.Millisecond
	start := time.Now()
	c := New(Config{BaseURL: srv.URL, Timeout: budget, AttemptTimeout: budget / 3})
	_, err := c.Push(context.Background(), "T-1", 1)
	elapsed := time.Since(start)

	want := &Error{Kind: KindUnavailable, Reason: "the gateway did not answer in time"}
	e := asError(t, err)
	if diff := cmp.Diff(want, e, cmpopts.IgnoreFields(Error{}, "Attempts", "Cause")); diff != "" {
		t.Errorf("error mismatch (-want +got):\n%s", diff)
	}
	if e.Attempts < 2 {
		t.Errorf("attempts = %d: a per-attempt timeout should leave room for retries", e.Attempts)
	}
	// It may stop up to one backoff delay early, when that delay would
	// not fit in what is left; never much later than the budget.
	if elapsed > budget+500*time.Millisecond {
		t.Errorf("gave up after %v, budget %v", elapsed, budget)
	}
}

func TestPushCallerCancellationIsReturnedAsIs(t *testing.T) {
	gw := &recorder{answers: []answer{{hang: true}}}
	srv := startGateway(t, gw)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := New(Config{BaseURL: srv.URL, Timeout: 5 * time.Second}).Push(ctx, "T-1", 1)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
	var e *Error
	if errors.As(err, &e) {
		t.Errorf("error is a gateway *Error %v; the caller ended the push", e)
	}
}

func TestPushNotConfigured(t *testing.T) {
	for _, base := range []string{"", "gateway.example.com", "ftp://gateway.example.com", "http://", "://x"} {
		t.Run(base, func(t *testing.T) {
			_, err := New(Config{BaseURL: base}).Push(context.Background(), "T-1", 1)
			e := asError(t, err)
			if e.Kind != KindUnavailable || e.Attempts != 0 || e.Reason == "" {
				t.Errorf("error = %+v, want unavailable with no attempt", e)
			}
		})
	}
}

func TestPushProgrammingErrors(t *testing.T) {
	c := New(Config{BaseURL: "http://gateway.test"})
	var e *Error
	if _, err := c.Push(context.Background(), "", 1); err == nil || errors.As(err, &e) {
		t.Errorf("empty terminal id: error = %v, want a plain error", err)
	}
	if _, err := c.Push(context.Background(), "T-1", make(chan int)); err == nil || errors.As(err, &e) {
		t.Errorf("unencodable payload: error = %v, want a plain error", err)
	}
}

func TestConfigMasksToken(t *testing.T) {
	cfg := Config{BaseURL: "http://gw", Token: "s3cret"}
	for _, s := range []string{cfg.String(), fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), cfg.LogValue().String()} {
		if strings.Contains(s, "s3cret") {
			t.Errorf("%q shows the token", s)
		}
	}
}

func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want a *gateway.Error", err, err)
	}
	return e
}

// PushKeyed calls before ahead of every attempt, and sends no attempt that it fails: the push
// ends there with before's error as it is.
func TestPushKeyedSendsNoAttemptBeforeRefuses(t *testing.T) {
	refused := errors.New("not recorded")
	for _, refuseAt := range []int{1, 2} {
		gw := &recorder{answers: []answer{{status: 503}, {status: 200}}}
		var called []int
		before := func(attempt int) error {
			called = append(called, attempt)
			if attempt == refuseAt {
				return refused
			}
			return nil
		}
		c := New(Config{BaseURL: startGateway(t, gw).URL, Rand: func() float64 { return 0 }})
		_, err := c.PushKeyed(context.Background(), "T-1", "k", 1, before)
		if err != refused {
			t.Errorf("refused at attempt %d: %v, want before's error", refuseAt, err)
		}
		gw.mu.Lock()
		sent := len(gw.requests)
		gw.mu.Unlock()
		if sent != refuseAt-1 || len(called) != refuseAt {
			t.Errorf("refused at attempt %d: %d sent, before called for %v", refuseAt, sent, called)
		}
	}
}
