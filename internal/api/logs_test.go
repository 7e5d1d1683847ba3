package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"backoffice/internal/api"
	"backoffice/internal/domain"
	"backoffice/internal/gateway"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// logLines returns the log lines with message msg.
func logLines(t *testing.T, logs string, msg string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if m["msg"] == msg {
			lines = append(lines, m)
		}
	}
	return lines
}

// oneLogLine is the one log line with message msg.
func oneLogLine(t *testing.T, logs string, msg string) map[string]any {
	t.Helper()
	lines := logLines(t, logs, msg)
	if len(lines) != 1 {
		t.Fatalf("%d lines %q, want 1, in:\n%s", len(lines), msg, logs)
	}
	return lines[0]
}

func TestAccessLogDurationInMilliseconds(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		h.get(samPath(leadA.String()), staffKey)
		line := oneLogLine(t, h.logs.String(), "request")
		if _, ok := line["duration_ms"].(float64); !ok {
			t.Errorf("duration_ms = %#v, want a number of milliseconds", line["duration_ms"])
		}
		if _, ok := line["duration"]; ok {
			t.Errorf("the line still has a unitless duration: %v", line)
		}
	})
}

// A push that ends in 502 says at warn level which line item and terminal, and why.
func TestPushFailureLoggedAtWarn(t *testing.T) {
	cases := []struct {
		name   string
		sim    gateway.SimOptions
		token  string
		reason string
	}{
		{"rejected", gateway.SimOptions{Token: "gw-token"}, "wrong-token", "token"},
		{"unavailable", gateway.SimOptions{FailureRate: 1}, "", "503"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, h *harness) {
				h.useGateway(t, gateway.NewSimulator(c.sim), c.token, 300*time.Millisecond)
				r := h.push(orderA, itemOK, staffKey)
				if r.Status != http.StatusBadGateway {
					t.Fatalf("status %d, want 502", r.Status)
				}
				line := oneLogLine(t, h.logs.String(), "push failed")
				if line["level"] != "WARN" || line["line_item"] != itemOK.String() || line["terminal_id"] != "TID/1 ?#%" ||
					line["request_id"] != r.Header.Get("X-Request-Id") {
					t.Errorf("push failed line = %v", line)
				}
				if reason, _ := line["reason"].(string); !strings.Contains(reason, c.reason) {
					t.Errorf("reason %q does not say %q", reason, c.reason)
				}
				if c.token != "" && strings.Contains(h.logs.String(), c.token) {
					t.Errorf("the log holds the gateway token")
				}
			})
		})
	}
}

// failingStore fails the service acceptance read with err.
type failingStore struct {
	*store.Store
	err error
}

func (f failingStore) ServiceAcceptance(context.Context, domain.Scope, domain.ID) (domain.ServiceAcceptance, error) {
	return domain.ServiceAcceptance{}, f.err
}

// A 5xx of our own is logged at error level with its cause and the request id; the client sees
// none of the cause.
func TestOwn5xxLoggedAtErrorWithCause(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		status int
	}{
		{"internal", errors.New("disk on fire"), http.StatusInternalServerError},
		{"database unavailable", fmt.Errorf("disk on fire: %w", store.ErrUnavailable), http.StatusServiceUnavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, h *harness) {
				h.handler = api.New(api.Deps{Store: failingStore{h.st, c.err}, Ring: testdb.Ring(t),
					Logger: slog.New(slog.NewJSONHandler(h.logs, nil))})
				r := h.get("/v1/crm/leads/"+leadA.String()+"/service-acceptance", staffKey)
				if r.Status != c.status || strings.Contains(string(r.Body), "disk on fire") {
					t.Fatalf("answer %d %s", r.Status, r.Body)
				}
				line := oneLogLine(t, h.logs.String(), "request failed")
				cause, _ := line["cause"].(string)
				if line["level"] != "ERROR" || !strings.Contains(cause, "disk on fire") || line["request_id"] != r.Header.Get("X-Request-Id") ||
					line["status"] != float64(c.status) {
					t.Errorf("request failed line = %v", line)
				}
			})
		})
	}
}

// A request whose caller has left (its context ended) is not a failure of ours: no 500, no
// error line, only an info line with the 499 nginx would log.
func TestClientGoneIsNotAFailure(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		h.handler = api.New(api.Deps{Store: h.st, Ring: testdb.Ring(t), Logger: slog.New(slog.NewJSONHandler(h.logs, nil))})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req := httptest.NewRequest(http.MethodGet, "/v1/crm/leads/"+leadA.String()+"/service-acceptance", nil).WithContext(ctx)
		req.Header.Set("Authorization", "Api-Key "+staffKey)
		rec := httptest.NewRecorder()
		h.handler.ServeHTTP(rec, req)
		if rec.Code != 499 {
			t.Errorf("status %d, want 499", rec.Code)
		}
		if lines := logLines(t, h.logs.String(), "request failed"); len(lines) != 0 {
			t.Errorf("logged as a failure: %v", lines)
		}
		if line := oneLogLine(t, h.logs.String(), "client went away"); line["level"] != "INFO" {
			t.Errorf("client went away line = %v", line)
		}
	})
}
