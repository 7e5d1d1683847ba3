package api

import (
	"bytes"
	"testing"
	"time"

	"backoffice/internal/domain"
)

// A kept answer is written again only for logs and meta equal to the field to those it was encoded
// from; any difference (a log's action, its date or the date's zone, the total, nil against
// empty) is encoded anew, and every answer is the bytes encoding would give now.
func TestSAMPageBodiesAreNeverAnswersOfOtherLogs(t *testing.T) {
	b := newSAMPageBodies()
	entity := domain.ID("00000005-0000-4000-8000-000000000000")
	at := time.Date(2026, 11, 25, 10, 0, 0, 123, time.UTC)
	logs := func() []domain.SAMActionLog {
		return []domain.SAMActionLog{
			{ID: "00000001-0000-4000-8000-000000000001", EntityID: entity, Action: "activate", ActionDate: at, SamID: 1},
			{ID: "00000001-0000-4000-8000-000000000002", EntityID: entity, Action: "deactivate", ActionDate: at.Add(-time.Hour), SamID: 2},
		}
	}
	meta := Meta{Page: 1, PerPage: 20, TotalCount: 2, TotalPages: 1}
	check := func(what string, meta Meta, logs []domain.SAMActionLog) []byte {
		t.Helper()
		got, err := b.body(entity, meta, logs)
		if err != nil {
			t.Fatal(err)
		}
		want, err := encodeJSON(List[samLogJSON]{Meta: meta, Data: samLogsJSON(logs)})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: answered %s, want %s", what, got, want)
		}
		return got
	}
	first := check("first", meta, logs())
	if again := check("the same page again", meta, logs()); &again[0] != &first[0] {
		t.Error("the same logs and meta were encoded again; want the kept answer")
	}
	changed := logs()
	changed[1].Action = "changed"
	check("a log's action changed", meta, changed)
	moved := logs()
	moved[0].ActionDate = at.Add(time.Nanosecond)
	check("a log's date moved", meta, moved)
	zoned := logs()
	zoned[0].ActionDate = at.In(time.FixedZone("x", 3600)) // the same instant, written with +01:00
	check("a log's date in another zone", meta, zoned)
	more := meta
	more.TotalCount, more.TotalPages = 21, 2
	check("the total changed", more, logs())
	empty := Meta{Page: 1, PerPage: 20, TotalCount: 0, TotalPages: 1}
	check("no logs", empty, []domain.SAMActionLog{})
	check("nil logs", empty, nil)
}
