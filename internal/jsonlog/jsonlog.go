// Package jsonlog is the service's log handler. It writes exactly the lines slog.JSONHandler
// writes, byte for byte (TestSameLines holds it to that), and writes the common ones itself:
// records whose attributes are strings of printable ASCII, numbers, booleans, durations and
// times, outside any group, as every request's access line is. Those it formats several times
// faster than the library (BenchmarkLine measures both side by side); every other record goes to
// a slog.JSONHandler on the same writer. NewDelayed's handler writes its lines below warning level
// in batches, for a server whose every request logs one.
package jsonlog

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"
)

// Handler is a slog.Handler writing one JSON object per line.
type Handler struct {
	out   *lockedWriter
	level slog.Leveler
	std   slog.Handler // slog.JSONHandler on out, with the same attributes and groups as this
	// pre are the attributes of WithAttrs as the line holds them (",\"key\":value" each);
	// whole is false once one of them, or a group, is not for this handler to write: then std
	// writes every record.
	pre   []byte
	whole bool
}

// New returns a handler writing to w the records at level or above, each line as it is logged.
func New(w io.Writer, level slog.Leveler) *Handler {
	return newHandler(&lockedWriter{w: w}, level)
}

// NewDelayed is New for a busy server, whose every request logs a line: lines below warning
// level wait up to delay, or until maxPending bytes of them wait, and are written together, in
// one write instead of one each; a warning or an error is written at once, after every line
// logged before it. Flush writes what waits: call it before the process ends. A process killed
// outright loses the lines of its last delay.
func NewDelayed(w io.Writer, level slog.Leveler, delay time.Duration) *Handler {
	out := &lockedWriter{w: w, delay: delay}
	out.timer = time.AfterFunc(time.Hour, func() { _ = out.Flush() })
	out.timer.Stop()
	return newHandler(out, level)
}

func newHandler(out *lockedWriter, level slog.Leveler) *Handler {
	return &Handler{out: out, level: level, std: slog.NewJSONHandler(out, &slog.HandlerOptions{Level: level}), whole: true}
}

// Flush writes the lines that wait (NewDelayed); with New's handler there are none.
func (h *Handler) Flush() error { return h.out.Flush() }

// maxPending is how many bytes of lines a delayed handler keeps before it writes them.
const maxPending = 32 << 10

// lockedWriter serializes the writes of the handler and of its slog.JSONHandler, one line each.
// With a delay it gathers the lines in pending and writes them when timer fires (delay after the
// first of them), when they fill maxPending, or on Flush.
type lockedWriter struct {
	mu      sync.Mutex
	w       io.Writer
	delay   time.Duration
	timer   *time.Timer
	pending []byte
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.delay <= 0 {
		return l.w.Write(b)
	}
	if len(l.pending) == 0 {
		l.timer.Reset(l.delay)
	}
	l.pending = append(l.pending, b...)
	if len(l.pending) >= maxPending {
		return len(b), l.writePending()
	}
	return len(b), nil
}

// Flush writes the lines that wait, if any.
func (l *lockedWriter) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writePending()
}

func (l *lockedWriter) writePending() error {
	if len(l.pending) == 0 {
		return nil
	}
	_, err := l.w.Write(l.pending)
	l.pending = l.pending[:0]
	if cap(l.pending) > 4*maxPending { // a rare long line is not kept for every batch after it
		l.pending = nil
	}
	return err
}

func (h *Handler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= h.level.Level()
}

// lineBuffers are the buffers lines are made in.
var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	err := h.write(ctx, r)
	if r.Level >= slog.LevelWarn {
		if ferr := h.out.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

// write hands the record's line to out.
func (h *Handler) write(ctx context.Context, r slog.Record) error {
	if !h.whole {
		return h.std.Handle(ctx, r)
	}
	buf := lineBuffers.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= 16<<10 { // a rare long line is not kept for every line after it
			lineBuffers.Put(buf)
		}
	}()
	line, ok := h.appendRecord((*buf)[:0], r)
	*buf = line
	if !ok {
		return h.std.Handle(ctx, r)
	}
	_, err := h.out.Write(line)
	return err
}

// appendRecord appends the record's line as slog.JSONHandler makes it; ok is false when the
// record holds something it leaves to the library.
func (h *Handler) appendRecord(b []byte, r slog.Record) (_ []byte, ok bool) {
	b = append(b, '{')
	if !r.Time.IsZero() {
		if b, ok = appendTime(append(b, `"time":`...), r.Time); !ok {
			return b, false
		}
		b = append(b, ',')
	}
	b = append(b, `"level":`...)
	if b, ok = appendString(b, r.Level.String()); !ok {
		return b, false
	}
	if b, ok = appendString(append(b, `,"msg":`...), r.Message); !ok {
		return b, false
	}
	b = append(b, h.pre...)
	r.Attrs(func(a slog.Attr) bool {
		b, ok = appendAttr(b, a)
		return ok
	})
	return append(b, "}\n"...), ok
}

// appendAttr appends ,"key":value.
func appendAttr(b []byte, a slog.Attr) (_ []byte, ok bool) {
	if a.Key == "" { // slog leaves out some attributes without a key, and inlines groups
		return b, false
	}
	if b, ok = appendString(append(b, ','), a.Key); !ok {
		return b, false
	}
	b = append(b, ':')
	v := a.Value
	switch v.Kind() {
	case slog.KindString:
		return appendString(b, v.String())
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10), true
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10), true
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool()), true
	case slog.KindDuration:
		return strconv.AppendInt(b, int64(v.Duration()), 10), true
	case slog.KindFloat64:
		return appendFloat(b, v.Float64())
	case slog.KindTime:
		return appendTime(b, v.Time())
	}
	return b, false // any, a group, a LogValuer
}

// appendString appends s quoted, when it is printable ASCII with no quote or backslash: what
// JSON and slog's escaping leave as it is.
func appendString(b []byte, s string) (_ []byte, ok bool) {
	for i := 0; i < len(s); i++ {
		if !plain[s[i]] {
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// plain are the bytes a JSON string holds as they are: printable ASCII but the quote and the
// backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendFloat appends f as encoding/json does (which slog calls), for the values it writes with
// strconv's 'f' format.
func appendFloat(b []byte, f float64) (_ []byte, ok bool) {
	if abs := math.Abs(f); math.IsNaN(f) || math.IsInf(f, 0) || abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		return b, false
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64), true
}

// appendTime appends t in RFC 3339 with nanoseconds, quoted, as slog does, for years it accepts.
func appendTime(b []byte, t time.Time) (_ []byte, ok bool) {
	if y := t.Year(); y < 0 || y >= 10000 {
		return b, false
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), true
}

func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.std = h.std.WithAttrs(as)
	c.pre = append([]byte(nil), h.pre...)
	for _, a := range as {
		var ok bool
		if c.pre, ok = appendAttr(c.pre, a); !ok {
			c.whole = false
		}
	}
	return &c
}

func (h *Handler) WithGroup(name string) slog.Handler {
	c := *h
	c.std = h.std.WithGroup(name)
	c.whole = c.whole && name == "" // slog ignores an empty group name
	return &c
}
