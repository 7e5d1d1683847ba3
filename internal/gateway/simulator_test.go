package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

type simResponse struct {
	Status int
	Body   string
}

func simDo(t *testing.T, h http.Handler, method, terminalID, token, body string) simResponse {
	t.Helper()
	target := "/v1/terminals/" + escapeSegment(terminalID) + "/parameters"
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return simResponse{rec.Code, strings.TrimSpace(rec.Body.String())}
}

func TestSimulatorStoresAndReturnsParameters(t *testing.T) {
	sim := NewSimulator(SimOptions{})
	put := simDo(t, sim, http.MethodPut, "T-1", "", `{"menu": ["batch_close"]}`)
	var answer struct {
		PushID string `json:"pushId"`
	}
	if put.Status != 200 || json.Unmarshal([]byte(put.Body), &answer) != nil || answer.PushID == "" {
		t.Fatalf("PUT = %+v, want 200 with a push id", put)
	}
	get := simDo(t, sim, http.MethodGet, "T-1", "", "")
	if diff := cmp.Diff(simResponse{200, `{"menu": ["batch_close"]}`}, get); diff != "" {
		t.Errorf("GET mismatch (-want +got):\n%s", diff)
	}

	simDo(t, sim, http.MethodPut, "T-1", "", `{"menu": []}`)
	if got, _ := sim.Last("T-1"); string(got) != `{"menu": []}` {
		t.Errorf("Last = %s, want the second push", got)
	}
}

func TestSimulatorUnknownTerminal(t *testing.T) {
	got := simDo(t, NewSimulator(SimOptions{}), http.MethodGet, "nope", "", "")
	want := simResponse{404, `{"message":"no parameters pushed for this terminal"}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET mismatch (-want +got):\n%s", diff)
	}
	if _, ok := NewSimulator(SimOptions{}).Last("nope"); ok {
		t.Error("Last found parameters for an unknown terminal")
	}
}

func TestSimulatorRejectsNonJSON(t *testing.T) {
	sim := NewSimulator(SimOptions{})
	got := simDo(t, sim, http.MethodPut, "T-1", "", `{"menu": `)
	if diff := cmp.Diff(simResponse{400, `{"message":"body must be JSON"}`}, got); diff != "" {
		t.Errorf("PUT mismatch (-want +got):\n%s", diff)
	}
	if _, ok := sim.Last("T-1"); ok {
		t.Error("the simulator stored a body that is not JSON")
	}
}

func TestSimulatorToken(t *testing.T) {
	tests := []struct {
		name          string
		authorization string
		want          int
	}{
		{"right token", "Bearer sim-token", 200},
		{"scheme in any case", "bearer sim-token", 200},
		{"missing", "", 401},
		{"wrong token", "Bearer other", 401},
		{"wrong scheme", "Basic sim-token", 401},
		{"token prefix", "Bearer sim-tok", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := NewSimulator(SimOptions{Token: "sim-token"})
			got := simDo(t, sim, http.MethodPut, "T-1", tt.authorization, `{}`)
			if got.Status != tt.want {
				t.Errorf("status = %d, want %d", got.Status, tt.want)
			}
			if tt.want == 401 && got.Body != `{"message":"missing or wrong bearer token"}` {
				t.Errorf("body = %s", got.Body)
			}
		})
	}
}

func TestSimulatorFailureRate(t *testing.T) {
	sim := NewSimulator(SimOptions{FailureRate: 1})
	for range 20 {
		got := simDo(t, sim, http.MethodPut, "T-1", "", `{}`)
		if diff := cmp.Diff(simResponse{503, `{"message":"simulated failure"}`}, got); diff != "" {
			t.Fatalf("PUT mismatch (-want +got):\n%s", diff)
		}
	}
	if _, ok := sim.Last("T-1"); ok {
		t.Error("a failed PUT stored parameters")
	}

	never := NewSimulator(SimOptions{FailureRate: 0})
	for range 20 {
		if got := simDo(t, never, http.MethodPut, "T-1", "", `{}`); got.Status != 200 {
			t.Fatalf("status = %d with failure rate 0", got.Status)
		}
	}
}

func TestSimulatorSameIdempotencyKeySamePushID(t *testing.T) {
	sim := NewSimulator(SimOptions{})
	push := func(key string) string {
		req := httptest.NewRequest(http.MethodPut, "/v1/terminals/T-1/parameters", strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", key)
		rec := httptest.NewRecorder()
		sim.ServeHTTP(rec, req)
		return rec.Body.String()
	}
	if a, b := push("k1"), push("k1"); a != b {
		t.Errorf("same key answered %s then %s", a, b)
	}
	if a, b := push("k2"), push("k3"); a == b {
		t.Errorf("different keys both answered %s", a)
	}
}

func TestClientAgainstSimulator(t *testing.T) {
	sim := NewSimulator(SimOptions{Token: "sim-token"})
	srv := startGateway(t, sim)
	c := New(Config{BaseURL: srv.URL, Token: "sim-token"})
	ids := []string{"T-1", "a/b", "with space", "what?now", "hash#1", "100%", "a%2Fb", ".", "..", "../x"}
	for _, id := range ids {
		payload := map[string]string{"terminalId": id}
		res, err := c.Push(context.Background(), id, payload)
		if err != nil || res.PushID == "" || res.Attempts != 1 {
			t.Errorf("Push(%q) = %+v, %v; want one attempt with a push id", id, res, err)
			continue
		}
		want, _ := json.Marshal(payload)
		if got, ok := sim.Last(id); !ok || string(got) != string(want) {
			t.Errorf("simulator holds %s for %q, want %s", got, id, want)
		}
		// The same escaping reads it back over HTTP.
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/terminals/"+escapeSegment(id)+"/parameters", nil)
		req.Header.Set("Authorization", "Bearer sim-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != string(want) {
			t.Errorf("GET %q = %d %s, want 200 %s", id, resp.StatusCode, body, want)
		}
	}
}

func TestClientAgainstSimulatorWrongToken(t *testing.T) {
	srv := startGateway(t, NewSimulator(SimOptions{Token: "sim-token"}))
	_, err := New(Config{BaseURL: srv.URL, Token: "not-the-sim-token"}).Push(context.Background(), "T-1", 1)
	want := &Error{Kind: KindRejected, Reason: "missing or wrong bearer token", Attempts: 1, StatusCode: 401}
	if diff := cmp.Diff(want, asError(t, err)); diff != "" {
		t.Errorf("error mismatch (-want +got):\n%s", diff)
	}
}

func TestClientAgainstFailingSimulator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := NewSimulator(SimOptions{FailureRate: 1})
		_, err := newBubbleClient(sim, Config{Timeout: 2 * time.Second}).Push(context.Background(), "T-1", 1)
		e := asError(t, err)
		if e.Kind != KindUnavailable || e.StatusCode != 503 || e.Attempts < 2 {
			t.Errorf("error = %+v, want unavailable after retrying 503s", e)
		}
	})
}

func TestSimulatorLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := NewSimulator(SimOptions{Latency: 300 * time.Millisecond})
		start := time.Now()
		res, err := newBubbleClient(sim, Config{}).Push(context.Background(), "T-1", 1)
		if err != nil || res.Attempts != 1 {
			t.Fatalf("Push = %+v, %v", res, err)
		}
		if elapsed := time.Since(start); elapsed != 300*time.Millisecond {
			t.Errorf("push took %v, want the 300ms latency", elapsed)
		}

		// Latency beyond the client's patience: the simulator gives up with it.
		slow := NewSimulator(SimOptions{Latency: time.Minute})
		start = time.Now()
		_, err = newBubbleClient(slow, Config{Timeout: time.Second}).Push(context.Background(), "T-1", 1)
		if e := asError(t, err); e.Kind != KindUnavailable {
			t.Errorf("error = %+v, want unavailable", e)
		}
		if elapsed := time.Since(start); elapsed > time.Second {
			t.Errorf("push took %v, want within the 1s budget", elapsed)
		}
		if _, ok := slow.Last("T-1"); ok {
			t.Error("a request abandoned by the client was stored")
		}
	})
}
