package gateway

import (
	"context"
	"errors"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

const (
	// tracerName is the instrumentation scope of the attempt spans.
	tracerName = "backoffice/internal/gateway"
	// urlTemplate is the request's path with the terminal id left out: spans never carry it.
	urlTemplate = "/v1/terminals/{terminalId}/parameters"
)

// startAttemptSpan starts the span of attempt n (1 for the first) of a push.
func (c *Client) startAttemptSpan(ctx context.Context, n int) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{
		semconv.HTTPRequestMethodPut,
		semconv.URLTemplate(urlTemplate),
		semconv.ServerAddress(c.base.Hostname()),
		attribute.Int("gateway.attempt", n),
	}
	if n > 1 {
		attrs = append(attrs, semconv.HTTPRequestResendCount(n-1))
	}
	return c.tracer.Start(ctx, "PUT "+urlTemplate, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// endAttemptSpan records the gateway's status, or why there was none, and ends the span. The
// description is the failure's reason, never its transport error (which names the URL).
func endAttemptSpan(span trace.Span, status int, err error) {
	defer span.End()
	if status != 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	}
	if err == nil {
		return
	}
	errorType := semconv.ErrorTypeOther
	if status != 0 {
		errorType = semconv.ErrorTypeKey.String(strconv.Itoa(status))
	}
	span.SetAttributes(errorType)
	var (
		again *retryable
		final *Error
	)
	switch {
	case errors.As(err, &again):
		span.SetStatus(codes.Error, again.reason)
	case errors.As(err, &final):
		span.SetStatus(codes.Error, final.Reason)
	default:
		span.SetStatus(codes.Error, "")
	}
}
