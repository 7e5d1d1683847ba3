package app

import (
	"context"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"backoffice/internal/secrets"
	"backoffice/internal/testdb"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var (
	curlMethod = regexp.MustCompile(`-X (\w+)`)
	curlHeader = regexp.MustCompile(`-H '([^:]+): ([^']*)'`)
	curlURL    = regexp.MustCompile(`'(http[^']*)'`)
)

// The demo's printed curl lines work when pasted, in the order printed.
func TestDemoCurlLinesWork(t *testing.T) {
	t.Chdir(t.TempDir())
	out, logs, stop := background(noEnv, "serve", "--demo", "--addr", freeAddr(t))
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("serve --demo: %v", err)
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "/parameters'") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "NOT for production") {
		t.Errorf("no loud warning about the development key: %s", logs.String())
	}
	var statuses []int
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.HasPrefix(line, "curl ") {
			continue
		}
		statuses = append(statuses, runCurlLine(t, line))
	}
	// Five operations (the push twice: the second line item has no inventory unit or shipment),
	// the audit list, the session line, the other partner's line (404: not theirs), the simulator.
	want := []int{200, 200, 200, 200, 200, 204, 200, 200, 404, 200}
	if len(statuses) != len(want) {
		t.Fatalf("%d curl lines, want %d:\n%s", len(statuses), len(want), out.String())
	}
	for i := range want {
		if statuses[i] != want[i] {
			t.Errorf("line %d: status %d, want %d", i, statuses[i], want[i])
		}
	}
}

func runCurlLine(t *testing.T, line string) int {
	t.Helper()
	method := http.MethodGet
	if m := curlMethod.FindStringSubmatch(line); m != nil {
		method = m[1]
	}
	u := curlURL.FindStringSubmatch(line)
	if u == nil {
		t.Fatalf("no URL in %q", line)
	}
	req, err := http.NewRequest(method, u[1], nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := curlHeader.FindStringSubmatch(line); h != nil {
		req.Header.Set(h[1], h[2])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// serve --demo loads its dataset (printed keys, users with every permission) only into its own
// database: pointed at another, empty one, it refuses, and leaves that database empty.
func TestDemoLoadsOnlyIntoItsOwnDatabase(t *testing.T) {
	t.Chdir(t.TempDir())
	db := filepath.Join(t.TempDir(), "prod.db")
	env := map[string]string{"BACKOFFICE_DATABASE_URL": "sqlite:" + db, "BACKOFFICE_MASTER_KEY": secrets.NewKey()}
	var stdout, stderr strings.Builder
	err := Run(context.Background(), Env{Args: []string{"serve", "--demo", "--addr", freeAddr(t)}, Getenv: func(k string) string { return env[k] },
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr})
	if err == nil || !strings.Contains(err.Error(), "only into its own database") {
		t.Fatalf("serve --demo on another database: %v\n%s", err, stderr.String())
	}
	st := testdb.OpenAsIs(t, "sqlite:"+db)
	if empty, err := st.IsEmpty(context.Background()); err != nil || !empty {
		t.Errorf("the other database after the refusal: empty %v, %v", empty, err)
	}
}
