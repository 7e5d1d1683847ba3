package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// TestLostDatabaseIs503 loses the database under the running service: every operation answers
// 503 unavailable with the error body (as documented in openapi.yaml), not a 500, and answers
// normally again once the database is back (its readiness check passes: a first connection may
// take longer than the connect timeout on a loaded server, and that request's
// 503 is right). Dead connections left in the pool have their own test in the store
// (TestLostConnectionsAreReplaced). PostgreSQL only: an embedded database has no
// connection to lose.
func TestLostDatabaseIs503(t *testing.T) {
	url, proxy := testdb.ViaProxy(t, testdb.URL(t, "postgres"))
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	st.SetChainSigner(testdb.Ring(t))
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, st)

	proxy.Cut()
	for _, op := range operations() {
		r := h.do(op.method, op.path, "Api-Key "+staffKey)
		wantError(t, r, http.StatusServiceUnavailable, "unavailable")
		if e := r.err(t); !strings.Contains(e.Detail, "database is unavailable") {
			t.Errorf("%s %s: detail %q does not say the database is unavailable", op.method, op.path, e.Detail)
		}
	}

	proxy.Restore()
	waitReady(t, h, 30*time.Second)
	for _, op := range operations() {
		want := http.StatusOK
		if op.method == http.MethodDelete {
			want = http.StatusNoContent
		}
		if r := h.do(op.method, op.path, "Api-Key "+staffKey); r.Status != want {
			t.Errorf("%s %s after the database returned: status %d, want %d: %s", op.method, op.path, r.Status, want, r.Body)
		}
	}
}

// waitReady polls /readyz until it answers 200, failing the test if it has not within limit.
func waitReady(t *testing.T, h *harness, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		r := h.do(http.MethodGet, "/readyz", "")
		if r.Status == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready %s after the database returned: %d %s", limit, r.Status, r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
