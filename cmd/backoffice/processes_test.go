package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"backoffice/internal/app"
	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
)

// loadDuration is how long the server is kept under load while other processes work on its file.
const loadDuration = 7 * time.Second

// Fixed ids of the demo dataset (internal/app/demo.go) this test uses.
const (
	procStaff    = "00000000-0000-4000-8000-000000000101"
	procLead     = "00000000-0000-4000-8000-000000000301"
	procMerchant = "00000000-0000-4000-8000-000000000501"
	procPartner  = "00000000-0000-4000-8000-000000000001"
)

func procID(group, n int) domain.ID {
	return domain.ID(fmt.Sprintf("00000000-0000-4000-%04d-%012d", 9000+group, n))
}

func procSSN(i int) string { return fmt.Sprintf("%03d-%02d-%04d", 100+i%800, 10+i%90, i%10000) }

// procDataset is the demo dataset plus principals with SSNs (so that rewrap has work) and
// documents to delete.
func procDataset(principals, documents int) *dataset.Dataset {
	ds := strongDemo(app.DemoDataset(time.Now().UTC()))
	for i := range principals {
		ds.Principals = append(ds.Principals, domain.Principal{ID: procID(1, i), LeadID: procLead, FirstName: "P", LastName: "L", SSN: ptr(procSSN(i))})
	}
	for i := range documents {
		ds.MerchantDocuments = append(ds.MerchantDocuments, domain.MerchantDocument{ID: procID(2, i), MerchantID: procMerchant,
			FileName: "doc.pdf", ContentType: "application/pdf", ContentBase64: bytes.Repeat([]byte{byte(i)}, 2048)})
	}
	return ds
}

func ptr[T any](v T) *T { return &v }

// procRun is one backoffice process run against the shared database file.
type procRun struct {
	t   *testing.T
	bin string
	env []string
}

// run runs the binary to completion and returns its standard output and error.
func (p procRun) run(ring string, args ...string) (string, string, error) {
	cmd := exec.Command(p.bin, args...)
	cmd.Env = append(append([]string{}, p.env...), "BACKOFFICE_MASTER_KEYS="+ring)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// ringOf is a BACKOFFICE_MASTER_KEYS value: the keys named, the first active.
func ringOf(keys map[string]string, ids ...string) string {
	var entries []string
	for _, id := range ids {
		entries = append(entries, id+":"+keys[id])
	}
	return strings.Join(entries, ",")
}

// TestOtherProcessesNeverHurtTheServer serves a dataset on SQLite under load while other
// processes work on the same file: every backoffice command that opens it, and the sqlite3 shell.
// A single 5xx, or an answer that does not show what another process has just committed, fails.
func TestOtherProcessesNeverHurtTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs processes for seconds")
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	dbPath := filepath.Join(dir, "bo.db")
	keys := map[string]string{"a": base64.StdEncoding.EncodeToString(mustKey(t)), "b": base64.StdEncoding.EncodeToString(mustKey(t))}
	p := procRun{t: t, bin: bin, env: append(os.Environ(),
		"BACKOFFICE_DATABASE_URL=sqlite:"+dbPath, "BACKOFFICE_MASTER_KEY=", "BACKOFFICE_GATEWAY_URL=",
		"BACKOFFICE_RATE_LIMIT=off", "BACKOFFICE_AUTH_FAILURE_LIMIT=off", "BACKOFFICE_LOG_LEVEL=warn")}

	const principals, documents = 200, 1000
	data := writeDatasetFile(t, dir, "data.json", procDataset(principals, documents))
	if _, errOut, err := p.run(ringOf(keys, "a"), "import", data); err != nil {
		t.Fatalf("import: %v\n%s", err, errOut)
	}

	addr := freeAddr(t)
	var logs lockedLog
	srv := exec.Command(bin, "serve", "--addr", addr)
	srv.Env = append(append([]string{}, p.env...), "BACKOFFICE_MASTER_KEYS="+ringOf(keys, "a", "b"))
	srv.Stderr = &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	base := "http://" + addr
	waitUp(t, base)

	c := &procClient{t: t, base: base, client: &http.Client{Timeout: 30 * time.Second}}
	ctx, cancel := context.WithTimeout(context.Background(), loadDuration)
	defer cancel()
	var wg sync.WaitGroup
	load := func(fn func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil && !t.Failed(); i++ {
				fn(i)
			}
		}()
	}
	staffKey := "Api-Key " + staffAPIKey
	for g := range 2 {
		load(func(i int) {
			n := (g*7919 + i) % principals
			c.expectSSN(staffKey, procLead, procID(1, n), procSSN(n))
		})
	}
	load(func(i int) {
		c.expect(http.MethodGet, "/v1/crm/sam-action-logs/"+procLead+"?page="+fmt.Sprint(1+i%9)+"&size=5", staffKey, http.StatusOK)
	})
	load(func(int) {
		c.expect(http.MethodGet, "/v1/crm/leads/"+procLead+"/service-acceptance", staffKey, http.StatusOK)
	})
	load(func(int) { c.expect(http.MethodGet, "/readyz", "", http.StatusOK) }) // its write probe too
	var deleted atomic.Int64
	for g := range 2 {
		load(func(i int) {
			n := g*documents/2 + i
			if i >= documents/2 {
				<-ctx.Done()
				return
			}
			path := "/v1/crm/merchants/" + procMerchant + "/documents/" + procID(2, n).String()
			c.expect(http.MethodDelete, path, staffKey, http.StatusNoContent)
			c.expect(http.MethodDelete, path, staffKey, http.StatusNotFound)
			deleted.Add(1)
		})
	}

	rounds := 0
	hasShell := sqliteShell() != ""
	for ctx.Err() == nil && !t.Failed() {
		otherProcessesRound(t, p, c, keys, rounds, dir, dbPath, hasShell)
		rounds++
	}
	cancel()
	wg.Wait()
	t.Logf("%d rounds of other processes, %d documents deleted, %d requests", rounds, deleted.Load(), c.requests.Load())
	if !hasShell {
		t.Log("sqlite3 is not installed: the shell part was skipped")
	}

	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.Wait(); err != nil {
		t.Errorf("serve exited with %v", err)
	}
	if t.Failed() {
		t.Logf("serve log:\n%s", logs.String())
	}
	checkIntegrity(t, dbPath)
}

// otherProcessesRound runs each command once against the server's file, and checks that the
// server sees what it committed on the very next request.
func otherProcessesRound(t *testing.T, p procRun, c *procClient, keys map[string]string, round int, dir, dbPath string, shell bool) {
	ring := ringOf(keys, "a", "b")
	must := func(args ...string) (string, string) {
		t.Helper()
		out, errOut, err := p.run(ring, args...)
		if err != nil {
			t.Fatalf("backoffice %s: %v\n%s", strings.Join(args, " "), err, errOut)
		}
		return out, errOut
	}

	key, errOut := must("apikey", "create", "--user", procStaff, "--name", "round")
	keyID := firstMatch(t, `created API key (\S+)`, errOut)
	c.expect(http.MethodGet, "/v1/crm/leads/"+procLead+"/service-acceptance", "Api-Key "+strings.TrimSpace(key), http.StatusOK)
	must("apikey", "list", "--user", procStaff)
	must("apikey", "revoke", keyID)
	c.expect(http.MethodGet, "/v1/crm/leads/"+procLead+"/service-acceptance", "Api-Key "+strings.TrimSpace(key), http.StatusUnauthorized)

	token, errOut := must("session", "create", "--user", procStaff)
	sessionID := firstMatch(t, `created session (\S+)`, errOut)
	c.expect(http.MethodGet, "/v1/crm/sam-action-logs/"+procLead, "Bearer "+strings.TrimSpace(token), http.StatusOK)
	must("session", "revoke", sessionID)
	c.expect(http.MethodGet, "/v1/crm/sam-action-logs/"+procLead, "Bearer "+strings.TrimSpace(token), http.StatusUnauthorized)

	must("keys", "status")
	// Alternate the active key, so that every rewrap rewrites every SSN under the server.
	active := []string{"a", "b"}
	if round%2 == 0 {
		active = []string{"b", "a"}
	}
	if _, errOut, err := p.run(ringOf(keys, active...), "keys", "rewrap", "--batch", "50"); err != nil {
		t.Fatalf("keys rewrap: %v\n%s", err, errOut)
	}

	lead, principal := procID(3, round), procID(4, round)
	small := &dataset.Dataset{
		Leads:      []domain.Lead{{ID: lead, PartnerID: procPartner, BusinessName: "Imported"}},
		Principals: []domain.Principal{{ID: principal, LeadID: lead, FirstName: "I", LastName: "M", SSN: ptr(procSSN(round))}},
	}
	must("import", writeDatasetFile(t, dir, fmt.Sprintf("small-%d.json", round), small))
	c.expectSSN("Api-Key "+staffAPIKey, lead.String(), principal, procSSN(round))

	export := filepath.Join(dir, "export.json")
	must("export", export)
	if b, err := os.ReadFile(export); err != nil || !json.Valid(b) {
		t.Fatalf("export: %v", err)
	}
	// A copy reads one snapshot of the served file, into a new one.
	must("copy", "--to", "sqlite:"+filepath.Join(dir, fmt.Sprintf("copy-%d.db", round)))

	if shell {
		out, err := exec.Command(sqliteShell(), "-cmd", ".timeout 10000", dbPath,
			"SELECT count(*) FROM merchant_documents; SELECT count(*) FROM audit_events; UPDATE partners SET name = name; PRAGMA quick_check;").CombinedOutput()
		if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "ok") {
			t.Fatalf("sqlite3: %v\n%s", err, out)
		}
	}
}

// procClient calls the server and fails the test on any unexpected status.
type procClient struct {
	t        *testing.T
	base     string
	client   *http.Client
	requests atomic.Int64
}

func (c *procClient) do(method, path, authorization string) (int, []byte) {
	req, err := http.NewRequest(method, c.base+path, nil)
	if err != nil {
		c.t.Error(err)
		return 0, nil
	}
	req.Header.Set("Authorization", authorization)
	resp, err := c.client.Do(req)
	c.requests.Add(1)
	if err != nil {
		c.t.Errorf("%s %s: %v", method, path, err)
		return 0, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Errorf("%s %s: reading the body: %v", method, path, err)
	}
	return resp.StatusCode, body
}

func (c *procClient) expect(method, path, authorization string, want int) []byte {
	status, body := c.do(method, path, authorization)
	if status != want {
		c.t.Errorf("%s %s: %d, want %d: %s", method, path, status, want, body)
	}
	return body
}

func (c *procClient) expectSSN(authorization, lead string, principal domain.ID, want string) {
	body := c.expect(http.MethodGet, "/v1/crm/leads/"+lead+"/principals/"+principal.String()+"/decrypt/ssn", authorization, http.StatusOK)
	var got struct{ SSN string }
	if json.Unmarshal(body, &got) == nil && got.SSN != "" && got.SSN != want {
		c.t.Errorf("decrypt %s: %q, want %q", principal, got.SSN, want)
	}
}

func firstMatch(t *testing.T, pattern, s string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %q in %q", pattern, s)
	}
	return m[1]
}

// checkIntegrity runs SQLite's full check on the file once every process has let go of it.
func checkIntegrity(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=rw")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var result string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&result); err != nil || result != "ok" {
		t.Fatalf("integrity_check: %q, %v", result, err)
	}
}

// sqliteShell is the path of Debian's sqlite3 shell, or "" when it is not installed.
func sqliteShell() string {
	path, err := exec.LookPath("sqlite3")
	if err != nil {
		return ""
	}
	return path
}

func mustKey(t *testing.T) []byte {
	t.Helper()
	k, err := secrets.ParseMasterKey(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return k.Bytes
}

func writeDatasetFile(t *testing.T, dir, name string, ds *dataset.Dataset) string {
	t.Helper()
	var b bytes.Buffer
	if err := dataset.Write(&b, ds); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// buildBinary builds the command into dir.
func buildBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "backoffice")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// lockedLog collects a process's standard error.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
