// Package reqlog ties log lines to the request they were written for. The HTTP layer puts the
// request's id in its context (WithID); a logger made by Wrap adds that id, and the trace id when
// the request is traced, to every line logged with the context, whichever package writes it: the
// access line, the gateway's attempts, a push's outcome. Loggers are called with the *Context
// variants (InfoContext, LogAttrs) so that the context reaches the handler.
package reqlog

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// The keys of the fields added to each line.
const (
	RequestIDKey = "request_id"
	TraceIDKey   = "trace_id"
)

type idKey struct{}

// WithID returns ctx carrying the request id.
func WithID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, idKey{}, id)
}

// ID is the request id ctx carries, or "".
func ID(ctx context.Context) string {
	id, _ := ctx.Value(idKey{}).(string)
	return id
}

// Wrap returns a logger writing through l's handler that adds request_id and trace_id from the
// context of each line. A logger Wrap made is returned as it is, so that wrapping twice adds
// the fields once.
func Wrap(l *slog.Logger) *slog.Logger {
	if _, ok := l.Handler().(handler); ok {
		return l
	}
	return slog.New(handler{next: l.Handler()})
}

// handler adds the context's ids to each record. The ids come before the line's own fields;
// after a WithGroup (nothing here uses groups) they would land inside the group.
type handler struct{ next slog.Handler }

func (h handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	ids := make([]slog.Attr, 0, 2)
	if id := ID(ctx); id != "" {
		ids = append(ids, slog.String(RequestIDKey, id))
	}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		ids = append(ids, slog.String(TraceIDKey, sc.TraceID().String()))
	}
	if len(ids) == 0 {
		return h.next.Handle(ctx, r)
	}
	// A new record, not r.AddAttrs: r's attributes may share storage with the caller's.
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(ids...)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(a)
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h handler) WithAttrs(as []slog.Attr) slog.Handler { return handler{next: h.next.WithAttrs(as)} }

func (h handler) WithGroup(name string) slog.Handler { return handler{next: h.next.WithGroup(name)} }
