package api

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the request spans.
const tracerName = "backoffice/internal/api"

// startRequestSpan starts the request's span, a child of the caller's W3C traceparent when it
// sent one. With no tracer (tracing off) it does nothing and costs nothing. The span gets its
// name and attributes in endRequestSpan, once the mux has matched the route: the raw path holds
// ids and never goes into a span.
func startRequestSpan(t trace.Tracer, r *http.Request) (context.Context, trace.Span) {
	if t == nil {
		return r.Context(), nil
	}
	ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	return t.Start(ctx, "HTTP "+knownMethod(r.Method), trace.WithSpanKind(trace.SpanKindServer))
}

// endRequestSpan names the span after the route pattern and records the method, the route and
// the status: nothing else of the request (no path, query, header or address).
func endRequestSpan(span trace.Span, method, route string, status int) {
	if span == nil {
		return
	}
	span.SetName(route)
	span.SetAttributes(semconv.HTTPRequestMethodKey.String(method), semconv.HTTPResponseStatusCode(status))
	if _, path, ok := strings.Cut(route, " "); ok {
		span.SetAttributes(semconv.HTTPRoute(path))
	}
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	span.End()
}
