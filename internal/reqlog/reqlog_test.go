package reqlog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"backoffice/internal/reqlog"
)

func line(t *testing.T, buf *bytes.Buffer) map[string]any {
	t.Helper()
	if n := bytes.Count(buf.Bytes(), []byte(`"request_id"`)); n > 1 {
		t.Errorf("request_id written %d times: %s", n, buf)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("%v: %s", err, buf)
	}
	buf.Reset()
	return m
}

// A line logged with a request's context carries its id and trace id, through With and twice
// wrapped alike; a line logged without one carries neither.
func TestLinesCarryTheContextsIDs(t *testing.T) {
	var buf bytes.Buffer
	log := reqlog.Wrap(reqlog.Wrap(slog.New(slog.NewJSONHandler(&buf, nil)))).With(slog.String("component", "gateway"))
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	traced := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}))

	log.InfoContext(reqlog.WithID(traced, "r-1"), "push failed", slog.Int("attempts", 3))
	m := line(t, &buf)
	if m["request_id"] != "r-1" || m["trace_id"] != tid.String() || m["component"] != "gateway" || m["attempts"] != 3.0 {
		t.Errorf("line %v", m)
	}

	log.InfoContext(reqlog.WithID(context.Background(), "r-2"), "untraced")
	if m := line(t, &buf); m["request_id"] != "r-2" || m["trace_id"] != nil {
		t.Errorf("untraced line %v", m)
	}
	log.Info("outside any request")
	if m := line(t, &buf); m["request_id"] != nil || m["trace_id"] != nil {
		t.Errorf("line outside a request %v", m)
	}
}
