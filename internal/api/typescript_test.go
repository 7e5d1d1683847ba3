package api_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"backoffice/internal/api"
	"backoffice/internal/gateway"
	"backoffice/internal/push"
	"backoffice/internal/testdb"
)

// TestTypeScriptClientCallsEveryOperation does what a front-end team does with openapi.yaml:
// openapi-typescript generates its types, tsc (strict) compiles a client written with
// openapi-fetch (testdata/node/client.ts), and the client calls every operation of the document
// against the service, checking what it gets: the nulls of a line item without inventory unit or
// shipment, the nullable enums, a 400's parameter, a deletion replayed under its Idempotency-Key,
// HEADs and the CORS preflights. The operations it called must be every operation the document
// declares. Where node is not installed it is skipped; .ci/run installs it.
func TestTypeScriptClientCallsEveryOperation(t *testing.T) {
	modules := nodeModulesFor(t)
	h := newHarness(t, testdb.Open(t, "sqlite"))
	gw := httptest.NewServer(h.sim)
	t.Cleanup(gw.Close)
	log := slog.New(slog.NewJSONHandler(h.logs, nil))
	now := func() time.Time { return fixtureNow }
	p := push.New(push.Config{Store: h.st, Gateway: gateway.New(gateway.Config{BaseURL: gw.URL, Token: "gw-token", Timeout: 2 * time.Second}),
		Budget: 2 * time.Second, Now: now, Logger: log})
	// The trail's tree: 300 events, and a checkpoint of them; a signed note stands in for a prune's.
	tree := newMemLog(t)
	tree.add(t, 300, principalA.String())
	tree.pruned = tree.sign(t)
	handler := api.New(api.Deps{Store: h.st, Ring: testdb.Ring(t), Pusher: p, Logger: log, Now: now, CORSOrigins: []string{crmOrigin},
		AuditLog: tree, Checkpoints: tree,
		// /metrics is registered by the command; here a stand-in answers as the Prometheus handler does.
		Extra: func(mux *http.ServeMux) {
			mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
				_, _ = w.Write([]byte("# stand-in\n"))
			})
		}})
	// Every answer the client gets is validated against the document too.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, r)
		res := recorded(r, rec)
		validate(t, r, res)
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.Status)
		_, _ = w.Write(res.Body)
	}))
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	for _, name := range []string{"client.ts", "tsconfig.json"} {
		copyFile(t, filepath.Join(nodeDir, name), filepath.Join(dir, name))
	}
	copyFile(t, "openapi.yaml", filepath.Join(dir, "openapi.yaml"))
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"type": "module"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(modules, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	node(t, dir, nil, "node_modules/openapi-typescript/bin/cli.js", "openapi.yaml", "-o", "api.d.ts")
	node(t, dir, nil, "node_modules/typescript/bin/tsc", "-p", "tsconfig.json")
	out := node(t, dir, []string{"BASE_URL=" + srv.URL, "API_KEY=" + staffKey, "ORIGIN=" + crmOrigin,
		"LEAD=" + leadA.String(), "PRINCIPAL=" + principalA.String(), "MERCHANT=" + merchantA.String(), "DOC=" + docA1.String(),
		"ORDER=" + orderA.String(), "BARE_ITEM=" + itemBare.String(), "AUDIT_EVENT=" + tree.events[7].ID.String()}, "dist/client.js")

	lines := strings.Split(strings.TrimSpace(out), "\n")
	var called []string
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &called); err != nil {
		t.Fatalf("the client's last line is not its list of calls: %v\n%s", err, out)
	}
	seen := map[string]bool{}
	for _, c := range called {
		f := strings.Fields(c) // status, method, path, and a note
		if len(f) >= 3 {
			seen[f[1]+" "+f[2]] = true
		}
	}
	doc, err := strictDocument()
	if err != nil {
		t.Fatal(err)
	}
	var missed []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if !seen[method+" "+path] {
				missed = append(missed, method+" "+path)
			}
		}
	}
	slices.Sort(missed)
	if len(missed) > 0 {
		t.Errorf("the TypeScript client did not call %d operations of the document: %v", len(missed), missed)
	}
	t.Logf("%d calls, every operation of the document:\n%s", len(called), strings.Join(called, "\n"))
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// node runs a node script in dir and returns its output; a failure fails the test with it.
func node(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("node", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
