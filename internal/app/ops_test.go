package app

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"backoffice/internal/buildinfo"
	"backoffice/internal/secrets"
)

// served runs `backoffice serve` with the given variables on free loopback ports, and returns
// the main and metrics addresses from its "serving" log line. The server stops with the test.
func servedOps(t *testing.T, vars map[string]string) (main, metrics string) {
	t.Helper()
	env := map[string]string{
		"BACKOFFICE_ADDR":         "127.0.0.1:0",
		"BACKOFFICE_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "serve.db"),
		"BACKOFFICE_MASTER_KEY":   secrets.NewKey(),
	}
	for k, v := range vars {
		env[k] = v
	}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Env{Args: []string{"serve"}, Getenv: func(k string) string { return env[k] },
			Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: pw})
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve returned %v", err)
		}
	})
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		var line struct {
			Msg     string `json:"msg"`
			Addr    string `json:"addr"`
			Metrics string `json:"metrics"`
			// The build, as the version command says it.
			Version  string `json:"version"`
			Revision string `json:"revision"`
			Go       string `json:"go"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" {
			if b := buildinfo.Read(); line.Version != b.Version || line.Revision != b.Revision || line.Go != b.GoVersion {
				t.Errorf("the serving line does not say which build runs (%+v): %s", b, sc.Bytes())
			}
			go io.Copy(io.Discard, pr) // keep the log flowing
			return line.Addr, strings.TrimSuffix(strings.TrimPrefix(line.Metrics, "http://"), "/metrics")
		}
	}
	t.Fatalf("serve ended before serving: %v", <-done)
	return "", ""
}

func fetch(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestServeHealthAndMetricsOnMainListener(t *testing.T) {
	addr, _ := servedOps(t, nil)
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := fetch(t, "http://"+addr+path); code != 200 {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	code, body := fetch(t, "http://"+addr+"/metrics")
	if code != 200 || !strings.Contains(body, `backoffice_http_requests_total{method="GET",route="GET /readyz",status="200"} 1`) ||
		!strings.Contains(body, `go_sql_open_connections{db_name="backoffice"}`) {
		t.Errorf("/metrics: %d\n%s", code, body)
	}
}

func TestServeMetricsOnOwnListener(t *testing.T) {
	addr, maddr := servedOps(t, map[string]string{"BACKOFFICE_METRICS_ADDR": "127.0.0.1:0"})
	if maddr == "" || maddr == addr {
		t.Fatalf("metrics address %q", maddr)
	}
	if code, _ := fetch(t, "http://"+addr+"/metrics"); code != 404 {
		t.Errorf("main listener /metrics: %d, want 404", code)
	}
	fetch(t, "http://"+addr+"/healthz")
	if code, body := fetch(t, "http://"+maddr+"/metrics"); code != 200 || !strings.Contains(body, `route="GET /healthz"`) {
		t.Errorf("metrics listener: %d\n%s", code, body)
	}
}

func TestServeMetricsOff(t *testing.T) {
	addr, _ := servedOps(t, map[string]string{"BACKOFFICE_METRICS_ADDR": "off"})
	if code, _ := fetch(t, "http://"+addr+"/metrics"); code != 404 {
		t.Errorf("/metrics: %d, want 404", code)
	}
}

// The server's own header cap answers before any handler: a head far past it is refused.
func TestServeHeaderCap(t *testing.T) {
	addr, _ := servedOps(t, nil)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	go func() {
		io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: "+strings.Repeat("a", 200<<10)+"\r\n\r\n")
	}()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("status %d, want 431", res.StatusCode)
	}
}

func TestLimitConfig(t *testing.T) {
	vars := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	c, err := loadConfig(vars())
	if err != nil || c.RateLimit != 50 || c.RateBurst != 100 || c.AuthFailureLimit != 10 || c.AuthFailureBurst != 20 ||
		c.MetricsAddr != "" || c.TrustedProxyHeader != "" {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = loadConfig(vars("BACKOFFICE_RATE_LIMIT", "off", "BACKOFFICE_RATE_BURST", "7", "BACKOFFICE_AUTH_FAILURE_LIMIT", "0.5",
		"BACKOFFICE_AUTH_FAILURE_BURST", "3", "BACKOFFICE_TRUSTED_PROXY_HEADER", "X-Forwarded-For", "BACKOFFICE_METRICS_ADDR", "off"))
	if err != nil || c.RateLimit != 0 || c.RateBurst != 7 || c.AuthFailureLimit != 0.5 || c.AuthFailureBurst != 3 ||
		c.TrustedProxyHeader != "X-Forwarded-For" || c.MetricsAddr != MetricsOff {
		t.Fatalf("set: %+v %v", c, err)
	}
	for _, bad := range [][]string{{"BACKOFFICE_RATE_LIMIT", "-1"}, {"BACKOFFICE_RATE_LIMIT", "fast"}, {"BACKOFFICE_RATE_LIMIT", "NaN"},
		{"BACKOFFICE_RATE_BURST", "0"}, {"BACKOFFICE_AUTH_FAILURE_BURST", "x"}, {"BACKOFFICE_AUTH_FAILURE_LIMIT", "Inf"}} {
		if _, err := loadConfig(vars(bad...)); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%v: error %v", bad, err)
		}
	}
}

// Each group the audit writer commits is counted on /metrics with its write time: a read of the
// trail writes one event, alone in its group.
func TestServeMetricsCountAuditGroups(t *testing.T) {
	e := newTestEnv(t)
	if _, _, err := e.run("import", e.writeDataset("demo.json", importableDemo(time.Now().UTC()))); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	_, stderr, stop := background(func(k string) string { return e.vars[k] }, "serve", "--addr", addr)
	reads := readTrailServed(t, addr, 3)
	code, body := fetch(t, "http://"+addr+"/metrics")
	if err := stop(); err != nil || reads != 3 {
		t.Fatalf("serve: %v, %d reads of the trail\n%s", err, reads, stderr)
	}
	for _, want := range []string{
		`backoffice_audit_group_events_bucket{outcome="committed",le="1"} 3`,
		`backoffice_audit_group_events_count{outcome="committed"} 3`,
		`backoffice_audit_group_write_seconds_count{outcome="committed"} 3`,
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s (%d)", want, code)
		}
	}
	if strings.Contains(body, `outcome="failed"`) {
		t.Errorf("/metrics counts a failed group:\n%s", body)
	}
}
