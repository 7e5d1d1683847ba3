package metrics

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"backoffice/internal/buildinfo"
	"backoffice/internal/testdb"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d", rec.Code)
	}
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

func TestExposition(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	if err := st.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := New(st.PoolCollector())
	route := "GET /v1/crm/sam-action-logs/{entityId}"
	m.ObserveRequest("GET", route, 200, 300*time.Microsecond)
	m.ObserveRequest("GET", route, 200, 2*time.Millisecond)
	m.ObserveRequest("GET", route, 404, time.Millisecond)
	m.ObserveDecrypt("granted")
	m.ObserveDecrypt("denied")
	m.ObservePush("succeeded", 40*time.Millisecond)
	m.ObservePush("unavailable", 10*time.Second)
	m.ObserveAuditGroup(32, 1500*time.Microsecond, true)
	m.ObserveAuditGroup(3, 300*time.Microsecond, true)
	m.ObserveAuditGroup(1, 10*time.Second, false)

	out := scrape(t, m)
	for _, want := range []string{
		`backoffice_http_requests_total{method="GET",route="GET /v1/crm/sam-action-logs/{entityId}",status="200"} 2`,
		`backoffice_http_requests_total{method="GET",route="GET /v1/crm/sam-action-logs/{entityId}",status="404"} 1`,
		`backoffice_http_request_duration_seconds_bucket{method="GET",route="GET /v1/crm/sam-action-logs/{entityId}",le="0.0005"} 1`,
		`backoffice_http_request_duration_seconds_count{method="GET",route="GET /v1/crm/sam-action-logs/{entityId}"} 3`,
		`backoffice_decrypts_total{outcome="granted"} 1`,
		`backoffice_decrypts_total{outcome="denied"} 1`,
		`backoffice_gateway_pushes_total{outcome="succeeded"} 1`,
		`backoffice_gateway_push_duration_seconds_count{outcome="unavailable"} 1`,
		`backoffice_audit_group_events_bucket{outcome="committed",le="4"} 1`,
		`backoffice_audit_group_events_sum{outcome="committed"} 35`,
		`backoffice_audit_group_events_count{outcome="failed"} 1`,
		`backoffice_audit_group_write_seconds_bucket{outcome="committed",le="0.002"} 2`,
		`backoffice_audit_group_write_seconds_bucket{outcome="committed",le="0.001"} 1`,
		`backoffice_audit_group_write_seconds_count{outcome="failed"} 1`,
		`go_sql_max_open_connections{db_name="backoffice"}`,
		`go_sql_open_connections{db_name="backoffice"}`,
		`go_build_info{`,
		`go_goroutines `,
		`process_resident_memory_bytes `,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("exposition lacks %s", want)
		}
	}
}

// Without a database there are no pool statistics, and nothing fails.
func TestWithoutDatabase(t *testing.T) {
	out := scrape(t, New(nil))
	if strings.Contains(out, "go_sql_") {
		t.Error("pool statistics without a pool")
	}
}

// Two instances never share a registry: nothing is registered globally.
func TestRegistriesAreSeparate(t *testing.T) {
	a, b := New(nil), New(nil)
	a.ObserveDecrypt("granted")
	if strings.Contains(scrape(t, b), "backoffice_decrypts_total{") {
		t.Error("b sees a's decrypts")
	}
}

// backoffice_build_info says which build runs, as the version command does.
func TestBuildInfo(t *testing.T) {
	b := buildinfo.Info{Version: "v1.2.0", Revision: "9509014abcdef0123456789abcdef0123456789a", Time: "2026-11-25T12:37:00Z", GoVersion: "go1.26.8"}
	m := New(nil)
	m.reg.Unregister(buildInfo(buildinfo.Read()))
	m.reg.MustRegister(buildInfo(b))
	want := `backoffice_build_info{goversion="go1.26.8",modified="false",revision="9509014abcdef0123456789abcdef0123456789a",vcs_time="2026-11-25T12:37:00Z",version="v1.2.0"} 1`
	if out := scrape(t, m); !strings.Contains(out, want) {
		t.Errorf("exposition lacks %s:\n%s", want, out)
	}
	// This test binary records no commit: the metric says so rather than leaving labels empty.
	if out := scrape(t, New(nil)); !strings.Contains(out, `revision="unknown"`) || !strings.Contains(out, `goversion="go1.`) {
		t.Errorf("exposition of this binary's build: %s", out)
	}
}
