package app

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/secrets"
	"backoffice/internal/testdb"
)

// These tests run the real `serve` and `import` commands through Run, as main does.

// replica is one `serve` running in the test process on a port of its own.
type replica struct {
	base string
	logs *lockedBuffer
}

// startReplicas starts n `serve` commands at once on one configuration, as replicas behind a
// load balancer start, and returns when each is listening. They stop when the test ends.
func startReplicas(t *testing.T, n int, vars map[string]string) []*replica {
	t.Helper()
	type started struct {
		r    *replica
		done chan error
	}
	all := make([]started, n)
	ctx, cancel := context.WithCancel(context.Background())
	for i := range all {
		r := &replica{logs: &lockedBuffer{}}
		done := make(chan error, 1)
		go func() {
			done <- Run(ctx, Env{Args: []string{"serve", "--addr", "127.0.0.1:0"}, Getenv: envOf(vars),
				Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: r.logs})
		}()
		all[i] = started{r, done}
	}
	t.Cleanup(func() {
		cancel()
		for i, s := range all {
			if err := <-s.done; err != nil {
				t.Errorf("replica %d: %v", i, err)
			}
		}
	})
	out := make([]*replica, n)
	for i, s := range all {
		s.r.base = "http://" + waitListening(t, s.r.logs, s.done)
		out[i] = s.r
	}
	return out
}

// waitListening reads the address a replica logs once it serves, or fails with the error the
// replica stopped with.
func waitListening(t *testing.T, logs *lockedBuffer, done chan error) string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if addr := servingAddr(logs.String()); addr != "" {
			return addr
		}
		select {
		case err := <-done:
			t.Fatalf("serve stopped before listening: %v\n%s", err, logs)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("serve did not start listening:\n%s", logs)
	return ""
}

func servingAddr(logs string) string {
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var line struct{ Msg, Addr string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" {
			return line.Addr
		}
	}
	return ""
}

// importDemo loads the demo dataset (a complete, valid one with a gateway line item) with the
// `import` command.
func importDemo(t *testing.T, vars map[string]string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "demo.json")
	var buf bytes.Buffer
	if err := dataset.Write(&buf, importableDemo(time.Now().UTC())); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := Run(context.Background(), Env{Args: []string{"import", file}, Getenv: envOf(vars),
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: io.Discard})
	if err != nil {
		t.Fatalf("import: %v", err)
	}
}

type answer struct {
	status int
	code   string // of an error body
}

func call(t *testing.T, method, url string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Api-Key "+importedStaffKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return answer{}
	}
	defer res.Body.Close()
	a := answer{status: res.StatusCode}
	if res.StatusCode >= 400 {
		var body struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
			Detail string `json:"detail"`
		}
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil || body.Status != res.StatusCode || body.Detail == "" {
			t.Errorf("%s %s -> %d: not the error body (%v)", method, url, res.StatusCode, err)
		}
		a.code = body.Code
	}
	return a
}

// heldGateway answers every push only when released, so that a push is certainly running while
// the other replica is asked for the same one. It lets go by itself after a while so that a
// broken lease shows as a failed assertion rather than a hung test.
type heldGateway struct {
	release chan struct{}
	calls   atomic.Int32
}

func (g *heldGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.calls.Add(1)
	select {
	case <-g.release:
	case <-time.After(5 * time.Second):
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"pushId": "push-1"}`)
}

func replicaVars(dbURL, gatewayURL string) map[string]string {
	return map[string]string{
		"BACKOFFICE_DATABASE_URL":    dbURL,
		"BACKOFFICE_MASTER_KEY":      secrets.NewKey(),
		"BACKOFFICE_GATEWAY_URL":     gatewayURL,
		"BACKOFFICE_GATEWAY_TOKEN":   "gateway-token",
		"BACKOFFICE_GATEWAY_TIMEOUT": "10s",
	}
}

// TestTwoReplicasShareOneDatabase runs two `serve` processes on one PostgreSQL database, reached
// directly and through PgBouncer in transaction mode: the same push sent to both at once runs once
// (200) and is refused on the other (409 push_in_progress), a document deleted through one is
// gone through the other, and a key revoked in the database is refused by both at once.
func TestTwoReplicasShareOneDatabase(t *testing.T) {
	for _, engine := range testdb.PostgresEngines() {
		t.Run(engine, func(t *testing.T) { twoReplicasShareOneDatabase(t, engine) })
	}
}

func twoReplicasShareOneDatabase(t *testing.T, engine string) {
	dbURL := testdb.URL(t, engine)
	gw := &heldGateway{release: make(chan struct{})}
	gwServer := httptest.NewServer(gw)
	t.Cleanup(gwServer.Close)
	vars := replicaVars(dbURL, gwServer.URL)
	replicas := startReplicas(t, 2, vars) // they migrate the empty database together
	importDemo(t, vars)

	push := fmt.Sprintf("/v1/crm/deployment-orders/%s/line-items/%s/device-parameters", demoOrder, demoLineItem)
	answers := make(chan answer, len(replicas))
	start := make(chan struct{})
	for _, r := range replicas {
		go func() {
			<-start
			answers <- call(t, http.MethodPost, r.base+push)
		}()
	}
	close(start)
	// The push holding the lease waits at the gateway, so the first answer is the other one.
	first := <-answers
	close(gw.release)
	second := <-answers
	got := []answer{first, second}
	slices.SortFunc(got, func(a, b answer) int { return a.status - b.status })
	if want := []answer{{status: 200}, {status: 409, code: "push_in_progress"}}; !slices.Equal(got, want) {
		t.Errorf("answers to the same push on both replicas = %+v, want %+v", got, want)
	}
	if n := gw.calls.Load(); n != 1 {
		t.Errorf("the gateway was called %d times, want once", n)
	}

	doc := fmt.Sprintf("/v1/crm/merchants/%s/documents/%s", demoMerchant, demoDocument)
	if a := call(t, http.MethodDelete, replicas[0].base+doc); a.status != http.StatusNoContent {
		t.Errorf("delete through the first replica: %+v, want 204", a)
	}
	if a := call(t, http.MethodDelete, replicas[1].base+doc); a != (answer{404, "not_found"}) {
		t.Errorf("delete through the second replica: %+v, want 404 not_found", a)
	}

	// Both replicas cache the key; revoked with plain SQL (as psql would), it is refused by each
	// on its next request.
	acceptance := "/v1/crm/leads/" + string(demoLead) + "/service-acceptance"
	for _, r := range replicas {
		for range 2 {
			if a := call(t, http.MethodGet, r.base+acceptance); a.status != http.StatusOK {
				t.Fatalf("acceptance before the revocation: %+v", a)
			}
		}
	}
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE api_keys SET revoked_at = 1`); err != nil {
		t.Fatal(err)
	}
	for i, r := range replicas {
		if a := call(t, http.MethodGet, r.base+acceptance); a.status != http.StatusUnauthorized {
			t.Errorf("replica %d after the key was revoked: %+v, want 401", i, a)
		}
	}
}

// TestServeAnswers503WhileTheDatabaseIsLost cuts a running server off its database and back.
func TestServeAnswers503WhileTheDatabaseIsLost(t *testing.T) {
	dbURL, proxy := testdb.ViaProxy(t, testdb.URL(t, "postgres"))
	vars := replicaVars(dbURL, "")
	r := startReplicas(t, 1, vars)[0]
	importDemo(t, vars)
	list := fmt.Sprintf("%s/v1/crm/sam-action-logs/%s", r.base, demoLead)
	if a := call(t, http.MethodGet, list); a.status != http.StatusOK {
		t.Fatalf("before: %+v", a)
	}
	proxy.Cut()
	if a := call(t, http.MethodGet, list); a != (answer{503, "unavailable"}) {
		t.Errorf("database lost: %+v, want 503 unavailable", a)
	}
	proxy.Restore()
	if a := call(t, http.MethodGet, list); a.status != http.StatusOK {
		t.Errorf("database back: %+v, want 200", a)
	}
}

// TestServeFailsFastWithoutTheDatabase starts serve against a port nobody listens on: it stops at
// once with one line that names the database, and never the password. No server is needed.
func TestServeFailsFastWithoutTheDatabase(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	vars := replicaVars("postgres://backoffice:s3cret-pw@"+addr+"/backoffice?sslmode=disable", "")
	err = Run(context.Background(), Env{Args: []string{"serve", "--addr", "127.0.0.1:0"}, Getenv: envOf(vars),
		Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard})
	if err == nil {
		t.Fatal("serve started without its database")
	}
	msg := err.Error()
	for _, want := range []string{"cannot reach database", `"backoffice"`, addr} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "s3cret-pw") || strings.Contains(msg, "\n") {
		t.Errorf("error %q shows the password or spans lines", msg)
	}
}
