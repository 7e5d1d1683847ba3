// Package tracing sets up OpenTelemetry tracing from the standard OTEL_* variables. Tracing is off
// unless they ask for it; then spans go to an OTLP collector over HTTP. The provider is returned,
// not installed globally: whoever wires the service hands it to the parts that make spans.
package tracing

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// ServiceName names the service in its traces unless OTEL_SERVICE_NAME (or
// OTEL_RESOURCE_ATTRIBUTES) says otherwise.
const ServiceName = "backoffice"

// Enabled reports whether the OTEL_* variables ask for traces: an OTLP endpoint is set
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), or OTEL_TRACES_EXPORTER
// names one. OTEL_TRACES_EXPORTER=none and OTEL_SDK_DISABLED=true turn tracing off. Settings
// this service cannot honour are errors, so that a misconfigured collector is noticed at start
// rather than by missing traces.
func Enabled(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	on := getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	switch exporter := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exporter {
	case "":
	case "none":
		return false, nil
	case "otlp":
		on = true
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER: %q is not supported; use otlp or none", exporter)
	}
	if !on {
		return false, nil
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch protocol {
	case "", "http/protobuf", "http/json":
		return true, nil
	}
	return false, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL: %q is not supported; use http/protobuf (the default) or http/json", protocol)
}

// Setup returns the tracer provider the OTEL_* variables ask for and a function that flushes
// and stops it. When tracing is off the provider is nil, no exporter exists and stop does
// nothing. The exporter reads its endpoint, headers, TLS and timeouts from the process
// environment itself, as every OpenTelemetry SDK does; the sampler and batching follow
// OTEL_TRACES_SAMPLER and OTEL_BSP_* likewise.
func Setup(ctx context.Context, getenv func(string) string) (trace.TracerProvider, func(context.Context) error, error) {
	stop := func(context.Context) error { return nil }
	on, err := Enabled(getenv)
	if err != nil || !on {
		return nil, stop, err
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, stop, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(ServiceName)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		return nil, stop, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}
