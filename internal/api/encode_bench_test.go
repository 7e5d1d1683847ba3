package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"backoffice/internal/domain"
)

// The benchmarks of this file decide the response encoder: each answer (a SAM page of the default
// and the largest size, a service acceptance, a decrypt, an error body) encoded by writeJSON and by
// the plain alternatives. encode_bench_v2_test.go adds JSON v2 (in this Go only with
// GOEXPERIMENT=jsonv2). docs/performance.md#the-response-encoder has the numbers.
//
//	go test ./internal/api -run '^$' -bench 'Encode' -benchmem -cpu 1 -count 6

// benchBodies are the values the handlers hand to writeJSON (a SAM page as the records the store
// gives; samLogsJSON turns them into what the handler encodes).
func benchBodies() []struct {
	name string
	v    any
} {
	mid, fcs, program := domain.ID("00000000-0000-4000-8000-000000003001"), "1234567", "opt_blue"
	var plans []domain.CardPlanSelection
	for i, name := range []string{"Visa", "Mastercard", "Discover", "American Express"} {
		plans = append(plans, domain.CardPlanSelection{CardPlan: domain.CardPlan{ID: domain.ID(fmt.Sprintf("00000004-0000-4000-8000-%012d", i)),
			Code: fmt.Sprintf("plan%d", i+1), DisplayName: name, SortOrder: int64(i + 1)}, Selected: i != 2})
	}
	return []struct {
		name string
		v    any
	}{
		{"sam_page_20", benchPage(20)},
		{"sam_page_100", benchPage(MaxPageSize)},
		{"acceptance", domain.ServiceAcceptance{MidID: &mid, Configured: true, CardPlans: plans, EBTFcsNumber: &fcs, AmexProgram: &program}},
		{"decrypt", struct {
			SSN string `json:"ssn"`
		}{"078-05-1120"}},
		{"error", errorBody{Status: http.StatusNotFound, Code: "not_found", Detail: "entity 00000005-0000-4000-8000-000000000000 not found"}},
	}
}

// benchPage is a page of n logs of a million, as the store gives it.
func benchPage(n int) List[domain.SAMActionLog] {
	logs := make([]domain.SAMActionLog, n)
	at := time.Date(2026, 11, 1, 12, 0, 0, 123456000, time.UTC)
	for i := range logs {
		logs[i] = domain.SAMActionLog{ID: domain.ID(fmt.Sprintf("5f0c2a1e-9b7d-4c3e-8a41-%012d", i)),
			EntityID: "00000005-0000-4000-8000-000000000000", Action: "add_equipment_purchase_fail",
			ActionDate: at.Add(-time.Duration(i)*time.Second - time.Duration(i%3)*time.Millisecond), SamID: int64(100000 + i)}
	}
	return List[domain.SAMActionLog]{Meta: Meta{Page: 1, PerPage: int64(n), TotalCount: 1_000_000, TotalPages: 1_000_000 / int64(max(n, 1))}, Data: logs}
}

// encode is writeJSON's encoding.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return buf.Bytes(), err
}

// handlerValue is what the handler gives writeJSON for v.
func handlerValue(v any) any {
	if page, ok := v.(List[domain.SAMActionLog]); ok {
		return List[samLogJSON]{Meta: page.Meta, Data: samLogsJSON(page.Data)}
	}
	return v
}

func BenchmarkEncode(b *testing.B) {
	for _, body := range benchBodies() {
		// The value itself, SAM logs as domain.SAMActionLog: what the handler encoded before
		// samLogJSON.
		b.Run(body.name+"/records", func(b *testing.B) {
			for b.Loop() {
				if _, err := encode(body.v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(body.name+"/marshal", func(b *testing.B) {
			for b.Loop() {
				if _, err := json.Marshal(body.v); err != nil {
					b.Fatal(err)
				}
			}
		})
		page, ok := body.v.(List[domain.SAMActionLog])
		if !ok {
			continue
		}
		b.Run(body.name+"/handler", func(b *testing.B) {
			for b.Loop() {
				if _, err := encode(handlerValue(body.v)); err != nil {
					b.Fatal(err)
				}
			}
		})
		// A read cache that kept a page's encoded logs instead of the records: what is left is
		// the envelope around them.
		data, _ := json.Marshal(samLogsJSON(page.Data))
		b.Run(body.name+"/cached_bytes", func(b *testing.B) {
			for b.Loop() {
				m := page.Meta
				out := make([]byte, 0, len(data)+100)
				out = append(out, `{"meta":{"page":`...)
				out = strconv.AppendInt(out, m.Page, 10)
				out = append(out, `,"perPage":`...)
				out = strconv.AppendInt(out, m.PerPage, 10)
				out = append(out, `,"totalCount":`...)
				out = strconv.AppendInt(out, m.TotalCount, 10)
				out = append(out, `,"totalPages":`...)
				out = strconv.AppendInt(out, m.TotalPages, 10)
				out = append(append(append(out, `},"data":`...), data...), "}\n"...)
				_ = out
			}
		})
	}
}

// The handler's SAM logs are encoded byte for byte as the records themselves would be, and so are
// the other bodies by json.Marshal (but for its escaping of <, > and &, which none of them holds).
func TestSAMLogJSONIsTheRecordsEncoding(t *testing.T) {
	page := benchPage(MaxPageSize)
	page.Data[1].ActionDate = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	page.Data[2].ActionDate = time.Date(2026, 1, 2, 3, 4, 5, 100, time.UTC)
	page.Data[3].ActionDate = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	page.Data[4].ActionDate = time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("", -5*3600))
	page.Data[5].Action = `<"quoted" & é \ ` + "\t\u2028"
	nilPage := benchPage(0)
	nilPage.Data = nil
	for _, v := range []any{page, benchPage(0), nilPage} {
		want, err := encode(v)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := encode(handlerValue(v)); err != nil || string(got) != string(want) {
			t.Errorf("handler's encoding %s (%v), the records' %s", got, err, want)
		}
	}
	for _, body := range benchBodies() {
		want, _ := encode(body.v)
		if got, _ := json.Marshal(body.v); string(want) != string(got)+"\n" {
			t.Errorf("%s: marshal %s, writeJSON %s", body.name, got, want)
		}
	}
}
