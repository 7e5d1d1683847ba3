package tracing

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestEnabled(t *testing.T) {
	cases := []struct {
		name string
		vars map[string]string
		want bool
		err  string // part of the error, when one is expected
	}{
		{"nothing set: off", nil, false, ""},
		{"an endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, ""},
		{"a traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true, ""},
		{"the exporter named", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{"exporter none wins over an endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false, ""},
		{"SDK disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false, ""},
		{"other variables alone: off", map[string]string{"OTEL_SERVICE_NAME": "bo", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, ""},
		{"http/json", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, true, ""},
		{"grpc is refused", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, "http/protobuf"},
		{"the traces protocol wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, true, ""},
		{"an unknown exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, "OTEL_TRACES_EXPORTER"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Enabled(envOf(c.vars))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error = %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Enabled = %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func TestSetupOffMakesNoProvider(t *testing.T) {
	tp, stop, err := Setup(context.Background(), envOf(nil))
	if err != nil || tp != nil {
		t.Fatalf("Setup = %v, %v; want no provider", tp, err)
	}
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// With an endpoint set, spans reach the collector over OTLP/HTTP when the provider stops.
func TestSetupExportsToTheCollector(t *testing.T) {
	var (
		mu    sync.Mutex
		paths []string
	)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		mu.Unlock()
	}))
	defer collector.Close()
	// The exporter reads its endpoint from the process environment, as every OTel SDK does.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	tp, stop, err := Setup(context.Background(), func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return collector.URL
		}
		return ""
	})
	if err != nil || tp == nil {
		t.Fatalf("Setup = %v, %v; want a provider", tp, err)
	}
	_, span := tp.Tracer("test").Start(context.Background(), "GET /healthz")
	span.End()
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 1 || paths[0] != "POST /v1/traces application/x-protobuf" {
		t.Fatalf("collector got %v, want one POST /v1/traces", paths)
	}
}
