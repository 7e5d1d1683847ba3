package api_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

// BenchmarkDecryptLatency decrypts one request at a time and reports the latency's percentiles:
// each waits for its own audit commit, so its tail is the commit's (the WAL's sync and the
// disk's slow spells), which an average hides.
//
//	GOMAXPROCS=1 go test ./internal/api -run '^$' -bench DecryptLatency -benchtime 5000x
func BenchmarkDecryptLatency(b *testing.B) {
	st, ring := fixtureStore(b, "sqlite")
	h := benchHandler(st, st, ring, nil)
	req := httptest.NewRequest(http.MethodGet, decryptPath(leadA, principalA, "ssn"), nil)
	req.Header.Set("Authorization", "Api-Key "+staffKey)
	took := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		took = append(took, time.Since(start))
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	slices.Sort(took)
	at := func(p float64) float64 { return float64(took[int(p*float64(len(took)-1))].Microseconds()) }
	b.ReportMetric(at(0.5), "p50-µs")
	b.ReportMetric(at(0.9), "p90-µs")
	b.ReportMetric(at(0.95), "p95-µs")
	b.ReportMetric(at(0.98), "p98-µs")
	b.ReportMetric(at(0.99), "p99-µs")
	b.ReportMetric(float64(took[len(took)-1].Microseconds()), "max-µs")
}
