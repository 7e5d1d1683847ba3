package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"backoffice/internal/api"
	"backoffice/internal/jsonlog"
	"backoffice/internal/oauth"
	"backoffice/internal/oauth/oauthtest"
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

// BenchmarkCredentialLatency reads a service acceptance one request at a time, alternating a
// session token and an access token (its key fetched, the token seen once before), and reports
// each one's latency percentiles: the two credentials' costs, measured in the same moments.
//
//	GOMAXPROCS=1 go test ./internal/api -run '^$' -bench CredentialLatency -benchtime 20000x
func BenchmarkCredentialLatency(b *testing.B) {
	st, ring := fixtureStore(b, "sqlite")
	p := oauthtest.New(b)
	v, err := oauth.New(context.Background(), oauth.Config{Issuer: p.Issuer, Audience: oauthtest.Audience,
		HTTPClient: p.Client(), Now: func() time.Time { return fixtureNow }})
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(jsonlog.New(io.Discard, slog.LevelInfo))
	h := api.New(api.Deps{Store: st, Ring: ring, Logger: log, Now: func() time.Time { return fixtureNow }, Tokens: v,
		Limits: api.Limits{Rate: 1e9, Burst: 1e9, FailureRate: 1, FailureBurst: 10}})
	path := "/v1/crm/leads/" + leadA.String() + "/service-acceptance"
	credentials := []struct{ name, header string }{
		{"session", "Bearer " + staffSession},
		{"token", "Bearer " + p.Token(b, staffUser.String(), fixtureNow, nil)},
	}
	took := make([][]time.Duration, len(credentials))
	for b.Loop() {
		for i, c := range credentials {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.Header.Set("Authorization", c.header)
			rec := httptest.NewRecorder()
			start := time.Now()
			h.ServeHTTP(rec, req)
			took[i] = append(took[i], time.Since(start))
			if rec.Code != http.StatusOK {
				b.Fatalf("%s: %d %s", c.name, rec.Code, rec.Body)
			}
		}
	}
	for i, c := range credentials {
		t := took[i]
		slices.Sort(t)
		at := func(p float64) float64 { return float64(t[int(p*float64(len(t)-1))].Nanoseconds()) / 1000 }
		b.ReportMetric(at(0.5), c.name+"-p50-µs")
		b.ReportMetric(at(0.99), c.name+"-p99-µs")
	}
}
