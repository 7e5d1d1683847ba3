package app

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"backoffice/internal/testdb"
)

// flakyGateway answers 503 to its first request and 200 after, remembering the headers it got.
type flakyGateway struct {
	mu      sync.Mutex
	headers []http.Header
}

func (g *flakyGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.headers = append(g.headers, r.Header.Clone())
	n := len(g.headers)
	g.mu.Unlock()
	if n == 1 {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.Write([]byte(`{"pushId":"p-1"}`))
}

func (g *flakyGateway) received() []http.Header {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]http.Header(nil), g.headers...)
}

// pushDemoTerminal serves the demo dataset through the handler as serve wires it, with a gateway
// that fails once, and pushes the demo line item: a push with one retry.
func pushDemoTerminal(t *testing.T, log *slog.Logger) *flakyGateway {
	t.Helper()
	st := testdb.Open(t, "sqlite")
	ring := testdb.Ring(t, "k1")
	importDataset(t, st, demoDataset(time.Now().UTC()), ring)
	gw := &flakyGateway{}
	gwSrv := httptest.NewServer(gw)
	t.Cleanup(gwSrv.Close)
	cfg := Config{GatewayURL: gwSrv.URL, GatewayToken: "gw-secret-token", GatewayTimeout: 5 * time.Second}
	srv := httptest.NewServer(newHandler(cfg, st, ring, log, nil))
	t.Cleanup(srv.Close)
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/crm/deployment-orders/"+string(demoOrder)+"/line-items/"+string(demoLineItem)+"/device-parameters", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Api-Key "+demoAPIKey)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("push answered %d", resp.StatusCode)
	}
	if n := len(gw.received()); n != 2 {
		t.Fatalf("gateway got %d requests, want 2", n)
	}
	return gw
}

// At debug level, serve logs each gateway attempt, without the token or the payload.
func TestServeLogsGatewayAttemptsAtDebug(t *testing.T) {
	logs := &lockedBuffer{}
	pushDemoTerminal(t, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	var attempts []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if m["msg"] == "gateway attempt" {
			attempts = append(attempts, m)
		}
	}
	if len(attempts) != 2 || attempts[0]["status"] != 503.0 || attempts[0]["retry"] != true ||
		attempts[1]["status"] != 200.0 || attempts[1]["retry"] != false {
		t.Errorf("gateway attempt lines = %v", attempts)
	}
	for _, secret := range []string{"gw-secret-token", "menu", demoAPIKey} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
}
