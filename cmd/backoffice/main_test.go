package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"backoffice/internal/app"
	"backoffice/internal/dataset"
	"backoffice/internal/secrets"
)

// TestBinaryEndToEnd builds the command, imports a dataset, serves it on a free port, calls the
// API over real HTTP, and stops it with SIGTERM: the exit status must be 0.
// staffAPIKey replaces the demo's staff key in the datasets these tests import: the demo's keys are
// public and weak, which only serve --demo accepts, in its own database; an import refuses them.
const staffAPIKey = "e2e-staff-key-hkjwTx3ePXaMLZT0A3N4uAtM_gvxBDjUgB3DZhkxFxU"

// strongDemo is the demo dataset with strong secrets: staffAPIKey for the staff user's key, and
// random ones for the others.
func strongDemo(ds *dataset.Dataset) *dataset.Dataset {
	for i := range ds.APIKeys {
		ds.APIKeys[i].Key = secrets.NewSessionToken() // 256 random bits, in a shape an import takes
	}
	ds.APIKeys[0].Key = staffAPIKey // the demo's first key is the staff user's
	for i := range ds.Sessions {
		ds.Sessions[i].Token = secrets.NewSessionToken()
	}
	return ds
}

func TestBinaryEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	env := append(os.Environ(),
		"BACKOFFICE_DATABASE_URL=sqlite:"+filepath.Join(dir, "bo.db"),
		"BACKOFFICE_MASTER_KEY="+secrets.NewKey(),
		"BACKOFFICE_GATEWAY_URL=",
	)
	var file bytes.Buffer
	if err := dataset.Write(&file, strongDemo(app.DemoDataset(time.Now().UTC()))); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data.json")
	if err := os.WriteFile(data, file.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	imp := exec.Command(bin, "import", data)
	imp.Env = env
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}

	addr := freeAddr(t)
	var logs bytes.Buffer
	srv := exec.Command(bin, "serve", "--addr", addr)
	srv.Env = env
	srv.Stderr = &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	base := "http://" + addr
	waitUp(t, base)

	lead := "00000000-0000-4000-8000-000000000301"
	var page struct {
		Meta struct{ TotalCount int } `json:"meta"`
	}
	getJSON(t, base+"/v1/crm/sam-action-logs/"+lead+"?size=5", &page)
	if page.Meta.TotalCount != 45 {
		t.Fatalf("totalCount %d", page.Meta.TotalCount)
	}
	var ssn struct{ SSN string }
	getJSON(t, base+"/v1/crm/leads/"+lead+"/principals/00000000-0000-4000-8000-000000000401/decrypt/ssn", &ssn)
	if ssn.SSN != "123-45-6789" {
		t.Fatalf("ssn %q", ssn.SSN)
	}

	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	if strings.Contains(logs.String(), "123-45-6789") || strings.Contains(logs.String(), staffAPIKey) {
		t.Fatal("a secret reached the logs")
	}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitUp(t *testing.T, base string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if resp, err := http.Get(base + "/openapi.yaml"); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("serve did not come up")
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Api-Key "+staffAPIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(fmt.Errorf("GET %s: %w", url, err))
	}
}
