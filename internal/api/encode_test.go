package api

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"backoffice/internal/domain"
)

// reference is what encoding/json writes for a page, as writeJSON would.
func reference(t testing.TB, m Meta, logs []domain.SAMActionLog) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(List[domain.SAMActionLog]{Meta: m, Data: logs}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func samplePage() []domain.SAMActionLog {
	t0 := time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)
	actions := []string{"update_mid", "", `quote " and \ backslash`, "tab\tnew\nline\x00nul\x1f", "<html> & amp",
		"ünïcødé ✓ 😀", "line\u2028sep\u2029", "bad utf-8 \xff\xfe", "del \x7f"}
	var logs []domain.SAMActionLog
	for i, a := range actions {
		logs = append(logs, domain.SAMActionLog{ID: domain.NewID(), EntityID: domain.NewID(), Action: a,
			ActionDate: t0.Add(-time.Duration(i) * 1234567 * time.Microsecond), SamID: int64(i * -7919)})
	}
	return logs
}

func TestSAMPageEncoding(t *testing.T) {
	m := Meta{Page: 3, PerPage: 20, TotalCount: 1_000_000, TotalPages: 50_000}
	for name, logs := range map[string][]domain.SAMActionLog{
		"sample": samplePage(), "empty": {}, "nil": nil,
	} {
		got, ok := appendSAMPage(nil, m, logs)
		if want := reference(t, m, logs); !ok || !bytes.Equal(got, want) {
			t.Errorf("%s: ok=%v\n got %s\nwant %s", name, ok, got, want)
		}
	}
	// A date encoding/json refuses is left to it.
	if _, ok := appendSAMPage(nil, m, []domain.SAMActionLog{{ActionDate: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}); ok {
		t.Error("a year past 9999 was encoded by hand")
	}
}

func FuzzSAMPageEncoding(f *testing.F) {
	for _, l := range samplePage() {
		f.Add(l.Action, string(l.ID), l.ActionDate.UnixMicro(), l.SamID, int64(1))
	}
	f.Add(strings.Repeat("x", 300), "", int64(-62135596800000000), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, action, id string, micros, samID, page int64) {
		logs := []domain.SAMActionLog{{ID: domain.ID(id), EntityID: domain.ID(id), Action: action,
			ActionDate: time.UnixMicro(micros).UTC(), SamID: samID}}
		m := Meta{Page: page, PerPage: 20, TotalCount: samID, TotalPages: micros}
		got, ok := appendSAMPage(nil, m, logs)
		if !ok {
			return // left to encoding/json
		}
		if want := reference(t, m, logs); !bytes.Equal(got, want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}

// BenchmarkSAMPageEncoding: a page of 20 logs, by hand and by encoding/json.
func BenchmarkSAMPageEncoding(b *testing.B) {
	t0 := time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)
	logs := make([]domain.SAMActionLog, 20)
	for i := range logs {
		logs[i] = domain.SAMActionLog{ID: domain.NewID(), EntityID: domain.NewID(), Action: "add_equipment_purchase",
			ActionDate: t0.Add(-time.Duration(i) * time.Second), SamID: int64(100000 + i)}
	}
	m := Meta{Page: 1, PerPage: 20, TotalCount: 1_000_000, TotalPages: 50_000}
	b.Run("hand", func(b *testing.B) {
		buf := make([]byte, 0, 8<<10)
		for b.Loop() {
			buf, _ = appendSAMPage(buf[:0], m, logs)
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("encoding/json", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(List[domain.SAMActionLog]{Meta: m, Data: logs}); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(buf.Len()))
	})
}
