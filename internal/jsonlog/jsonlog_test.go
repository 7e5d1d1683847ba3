package jsonlog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"backoffice/internal/domain"
)

// lines logs with each logger made from a handler on its own buffer and returns what each wrote.
func lines(log func(*slog.Logger)) (ours, std string) {
	var a, b bytes.Buffer
	log(slog.New(New(&a, slog.LevelDebug)))
	log(slog.New(slog.NewJSONHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})))
	return a.String(), b.String()
}

type valuer struct{}

func (valuer) LogValue() slog.Value {
	return slog.GroupValue(slog.Int("a", 1), slog.String("b", "x\ty"))
}

var at = time.Date(2026, 11, 28, 9, 30, 1, 123456789, time.UTC)

// record is a record at a fixed time, as a logger would make it.
func record(level slog.Level, msg string, attrs ...slog.Attr) slog.Record {
	r := slog.NewRecord(at, level, msg, 0)
	r.AddAttrs(attrs...)
	return r
}

// Every line is the library's, byte for byte, whether this handler writes it or hands it on.
func TestSameLines(t *testing.T) {
	zone := time.FixedZone("", -5*3600)
	cases := map[string]func(*slog.Logger){
		"access line": func(l *slog.Logger) {
			l.Handler().Handle(context.Background(), record(slog.LevelInfo, "request", slog.String("request_id", "ef662aef14babe33"),
				slog.String("method", "GET"), slog.String("route", "GET /v1/crm/leads/{leadId}/service-acceptance"),
				slog.Int("status", 200), slog.Float64("duration_ms", 0.052)))
		},
		"every simple kind": func(l *slog.Logger) {
			l.Handler().Handle(context.Background(), record(slog.LevelWarn+2, "kinds <&>", slog.Int64("i", math.MinInt64),
				slog.Uint64("u", math.MaxUint64), slog.Bool("t", true), slog.Bool("f", false), slog.Duration("d", -3*time.Second),
				slog.Time("at", at.In(zone)), slog.Float64("zero", 0), slog.Float64("negzero", math.Copysign(0, -1)),
				slog.Float64("small", 1e-6), slog.Float64("big", 1e21-1e5), slog.Float64("pi", math.Pi), slog.String("empty", "")))
		},
		"floats encoding/json writes otherwise": func(l *slog.Logger) {
			l.Handler().Handle(context.Background(), record(slog.LevelInfo, "f", slog.Float64("tiny", 1e-7), slog.Float64("huge", 1e21),
				slog.Float64("neg", -2.5e-9)))
		},
		"not a number": func(l *slog.Logger) {
			l.Handler().Handle(context.Background(), record(slog.LevelInfo, "f", slog.Float64("nan", math.NaN()), slog.Float64("inf", math.Inf(1))))
		},
		"strings to escape": func(l *slog.Logger) {
			for _, s := range []string{`a"b`, `a\b`, "tab\there", "line\nbreak", "caf\u00e9", "\u2028", "\x7f", "bad \xff utf-8", "<html>&"} {
				l.Handler().Handle(context.Background(), record(slog.LevelInfo, s, slog.String(s, s)))
			}
		},
		"error, any, LogValuer, group, no key": func(l *slog.Logger) {
			for _, a := range []slog.Attr{slog.Any("error", errors.New("boom \"x\"")), slog.Any("list", []int{1, 2}),
				slog.Any("v", valuer{}), slog.Group("g", slog.Int("n", 1)), slog.Group("", slog.Int("inline", 2)),
				slog.Any("", nil), slog.Int("", 3), slog.Group("empty")} {
				l.Handler().Handle(context.Background(), record(slog.LevelInfo, "x", slog.String("before", "b"), a, slog.String("after", "a")))
			}
		},
		"no time, odd levels, a year out of range": func(l *slog.Logger) {
			r := slog.NewRecord(time.Time{}, slog.LevelDebug-3, "no time", 0)
			l.Handler().Handle(context.Background(), r)
			l.Handler().Handle(context.Background(), slog.NewRecord(time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC), slog.LevelError+9, "far", 0))
			l.Handler().Handle(context.Background(), record(slog.LevelInfo, "t", slog.Time("t", time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC))))
		},
		"the Logger's With and WithGroup": func(l *slog.Logger) {
			w := l.With(slog.String("component", "gateway"), slog.Int("n", 2))
			w.Info("simple", slog.Bool("ok", true))
			w.With(slog.Any("err", errors.New("e"))).Info("after an any")
			w.WithGroup("g").Info("grouped", slog.Int("x", 1))
			w.WithGroup("g").With(slog.Int("y", 2)).Info("grouped with")
			w.WithGroup("").Info("empty group name", slog.Int("x", 1))
			l.With().Info("no attrs")
		},
		"the Logger's own calls": func(l *slog.Logger) {
			l.Debug("d")
			l.LogAttrs(context.Background(), slog.LevelInfo, "la", slog.String("k", "v"))
			l.Info("args", "k", "v", "n", 3)
		},
	}
	for name, log := range cases {
		t.Run(name, func(t *testing.T) {
			ours, std := lines(log)
			if strings.Contains(name, "Logger") { // the Logger stamps each line with the time of the call
				ours, std = dropTimes(ours), dropTimes(std)
			}
			if ours != std {
				t.Fatalf("lines differ:\nours: %s\nstd:  %s", ours, std)
			}
		})
	}
}

// dropTimes removes the time of every line.
func dropTimes(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if _, rest, ok := strings.Cut(line, `"level":`); ok {
			line = rest
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// Any string, number and message: the same bytes as the library's.
func FuzzSameLines(f *testing.F) {
	f.Add("request", "route", "GET /v1/x", int64(200), 0.052, true)
	f.Add("m\n", "k\"", "\x00\xff", int64(-1), 1e-7, false)
	f.Fuzz(func(t *testing.T, msg, key, s string, i int64, fl float64, b bool) {
		ours, std := lines(func(l *slog.Logger) {
			l.Handler().Handle(context.Background(), record(slog.LevelInfo, msg, slog.String(key, s), slog.Int64("i", i),
				slog.Float64("f", fl), slog.Bool("b", b)))
		})
		if ours != std {
			t.Fatalf("lines differ:\nours: %s\nstd:  %s", ours, std)
		}
	})
}

// Lines written at once from many goroutines, some by the library, stay whole, also when they
// wait to be written together.
func TestLinesStayWhole(t *testing.T) {
	t.Run("at once", func(t *testing.T) {
		var buf bytes.Buffer
		linesStayWhole(t, New(&buf, slog.LevelInfo), &buf)
	})
	t.Run("delayed", func(t *testing.T) {
		var buf bytes.Buffer
		h := NewDelayed(&buf, slog.LevelInfo, time.Hour)
		linesStayWhole(t, h, &buf, h.Flush)
	})
}

func linesStayWhole(t *testing.T, h slog.Handler, buf *bytes.Buffer, flush ...func() error) {
	l := slog.New(h)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for range 200 {
				if g%2 == 0 {
					l.Info("fast", slog.Int("g", g), slog.String("pad", strings.Repeat("x", 300)))
				} else {
					l.Info("library", slog.Any("err", errors.New(strings.Repeat("y", 300))))
				}
			}
		})
	}
	wg.Wait()
	for _, f := range flush {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 8*200 {
		t.Fatalf("%d lines, want %d", len(lines), 8*200)
	}
	for i, line := range lines {
		if !strings.HasPrefix(line, `{"time":`) || !strings.HasSuffix(line, `}`) || strings.Count(line, `"time"`) != 1 {
			t.Fatalf("line %d is not one whole line: %.120s", i+1, line)
		}
	}
}

// writes keeps each Write it is given apart.
type writes struct {
	mu  sync.Mutex
	got []string
}

func (w *writes) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, string(b))
	return len(b), nil
}

func (w *writes) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.got)
}

// A delayed handler writes its info lines together: not at once, but on Flush, when the delay
// has passed, or when they fill maxPending; a warning at once, after the lines before it.
func TestDelayedLines(t *testing.T) {
	t.Run("flush", func(t *testing.T) {
		w := &writes{}
		h := NewDelayed(w, slog.LevelInfo, time.Hour)
		l := slog.New(h)
		l.Info("one")
		l.Info("two")
		if got := w.all(); len(got) != 0 {
			t.Fatalf("written before the delay: %q", got)
		}
		if err := h.Flush(); err != nil {
			t.Fatal(err)
		}
		got := w.all()
		if len(got) != 1 || !strings.Contains(got[0], `"msg":"one"`) || !strings.HasSuffix(got[0], `"msg":"two"}`+"\n") {
			t.Fatalf("writes %q, want both lines in one", got)
		}
	})
	t.Run("after the delay", func(t *testing.T) {
		w := &writes{}
		l := slog.New(NewDelayed(w, slog.LevelInfo, time.Millisecond))
		l.Info("one")
		for deadline := time.Now().Add(10 * time.Second); len(w.all()) == 0; {
			if time.Now().After(deadline) {
				t.Fatal("the line was never written")
			}
			time.Sleep(time.Millisecond)
		}
		if got := w.all(); len(got) != 1 || !strings.Contains(got[0], `"msg":"one"`) {
			t.Fatalf("writes %q", got)
		}
	})
	t.Run("a warning at once", func(t *testing.T) {
		w := &writes{}
		l := slog.New(NewDelayed(w, slog.LevelInfo, time.Hour))
		l.Info("before")
		l.Warn("warning")
		got := w.all()
		if len(got) == 0 || !strings.Contains(strings.Join(got, ""), `"msg":"before"`) || !strings.HasSuffix(got[len(got)-1], `"msg":"warning"}`+"\n") {
			t.Fatalf("writes %q, want the earlier line, then the warning, written at once", got)
		}
		l.Error("library", slog.Any("err", errors.New("e"))) // through slog.JSONHandler
		if got := w.all(); !strings.Contains(got[len(got)-1], `"msg":"library"`) {
			t.Fatalf("the error line waits: %q", got)
		}
	})
	t.Run("full", func(t *testing.T) {
		w := &writes{}
		l := slog.New(NewDelayed(w, slog.LevelInfo, time.Hour))
		pad := strings.Repeat("x", 1000)
		for range maxPending / 1000 {
			l.Info("line", slog.String("pad", pad))
		}
		got := w.all()
		if len(got) != 1 || len(got[0]) < maxPending {
			t.Fatalf("%d writes, want the lines written together once they filled %d bytes", len(got), maxPending)
		}
	})
}

func TestLevel(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(New(&buf, slog.LevelWarn))
	l.Info("dropped")
	l.Warn("kept")
	if got := buf.String(); strings.Contains(got, "dropped") || !strings.Contains(got, "kept") {
		t.Fatalf("wrote %q", got)
	}
}

// The access line, written by this handler and by the library.
func BenchmarkLine(b *testing.B) {
	r := record(slog.LevelInfo, "request", slog.String("request_id", "ef662aef14babe33"), slog.String("method", "GET"),
		slog.String("route", "GET /v1/crm/leads/{leadId}/service-acceptance"), slog.Int("status", 200), slog.Float64("duration_ms", 0.052))
	for name, h := range map[string]slog.Handler{
		"jsonlog": New(io.Discard, slog.LevelInfo),
		"slog":    slog.NewJSONHandler(io.Discard, nil),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = h.Handle(context.Background(), r)
			}
		})
	}
}

// An SSN redacts itself in the service's log lines however it reaches them: as an attribute of
// the line, inside a group, or fixed on a logger by With (its LogValue, which the library calls).
func TestSSNsStayRedacted(t *testing.T) {
	const plain = "123-45-6789"
	ssn := domain.NewSSN(plain)
	var buf bytes.Buffer
	l := slog.New(New(&buf, slog.LevelDebug))
	l.Info("decrypt", slog.Any("ssn", ssn), slog.String("route", "GET /x"))
	l.Info("grouped", slog.Group("principal", slog.Any("ssn", ssn)))
	l.With(slog.Any("ssn", ssn)).Info("with")
	l.Info("args", "ssn", ssn)
	if out := buf.String(); strings.Contains(out, plain) || strings.Count(out, "[REDACTED]") != 4 {
		t.Fatalf("an SSN reached the log, or not as [REDACTED]:\n%s", out)
	}
}
