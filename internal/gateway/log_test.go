package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// logLines decodes the JSON lines of a slog handler's output, without their time.
func logLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		delete(m, "time")
		lines = append(lines, m)
	}
	return lines
}

func TestPushLogsEachAttemptAtDebug(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
		gw := &recorder{answers: []answer{{status: 503, body: "busy"}, {status: 200, body: `{"pushId": "p-1"}`}}}
		c := newBubbleClient(gw, Config{Token: "s3cret-token", Logger: log})
		if _, err := c.Push(context.Background(), "T/1", map[string]string{"merchantNumber": "payload-marker"}); err != nil {
			t.Fatal(err)
		}
		want := []map[string]any{
			{"level": "DEBUG", "msg": "gateway attempt", "terminal_id": "T/1", "attempt": 1.0, "duration_ms": 0.0,
				"status": 503.0, "error": "gateway answered 503 Service Unavailable", "retry": true, "delay_ms": 50.0},
			{"level": "DEBUG", "msg": "gateway attempt", "terminal_id": "T/1", "attempt": 2.0, "duration_ms": 0.0,
				"status": 200.0, "retry": false},
		}
		if diff := cmp.Diff(want, logLines(t, out.String())); diff != "" {
			t.Errorf("log mismatch (-want +got):\n%s", diff)
		}
		for _, secret := range []string{"s3cret-token", "payload-marker"} {
			if strings.Contains(out.String(), secret) {
				t.Errorf("the log holds %q", secret)
			}
		}
	})
}

func TestPushLogsTransportErrorsAndGivingUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
		transport := roundTripFunc(func(*http.Request) (*http.Response, error) {
			return nil, errors.New("connection refused")
		})
		c := New(Config{BaseURL: "http://gateway.test", Timeout: 200 * time.Millisecond, Rand: fixedRand,
			HTTPClient: &http.Client{Transport: transport}, Logger: log})
		if _, err := c.Push(context.Background(), "T-1", 1); err == nil {
			t.Fatal("Push succeeded")
		}
		lines := logLines(t, out.String())
		// Delays of 50 and 100 ms fit in 200 ms; the next (200 ms) would not.
		if len(lines) != 3 {
			t.Fatalf("got %d lines, want 3: %s", len(lines), out.String())
		}
		first, last := lines[0], lines[2]
		if e, _ := first["error"].(string); !strings.Contains(e, "could not be reached") || !strings.Contains(e, "connection refused") {
			t.Errorf("first attempt's error = %q, want the reason and its cause", e)
		}
		if _, ok := first["status"]; ok {
			t.Errorf("first attempt logged a status without an answer: %v", first)
		}
		if last["attempt"] != 3.0 || last["retry"] != false || last["delay_ms"] != nil {
			t.Errorf("last attempt = %v, want attempt 3 with no retry", last)
		}
	})
}

func TestPushLogsNothingAboveDebug(t *testing.T) {
	var out bytes.Buffer
	gw := &recorder{answers: []answer{{status: 503}, {status: 200}}}
	c := newBubbleClient(gw, Config{Logger: slog.New(slog.NewJSONHandler(&out, nil)), Rand: func() float64 { return 0 }})
	if _, err := c.Push(context.Background(), "T-1", 1); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Errorf("logged at info level: %s", out.String())
	}
}
