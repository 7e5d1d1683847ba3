package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"backoffice/internal/api"
	"backoffice/internal/dataset"
	"backoffice/internal/push"
	"backoffice/internal/testdb"
)

// BenchmarkOperations serves each read operation through the real router, middleware and a
// SQLite store (the fixture), without the network: the service's own cost per request.
func BenchmarkOperations(b *testing.B) {
	st := testdb.Open(b, "sqlite")
	st.SetClock(func() time.Time { return fixtureNow })
	ring := testdb.Ring(b)
	if _, err := dataset.Import(context.Background(), st, fixture(), ring); err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	h := api.New(api.Deps{Store: st, Ring: ring, Pusher: push.New(push.Config{Store: st, Logger: log}), Logger: log,
		Limits: api.Limits{Rate: 1e9, Burst: 1e9, FailureRate: 1, FailureBurst: 10}})
	for _, c := range []struct{ name, path string }{
		{"acceptance", "/v1/crm/leads/" + leadA.String() + "/service-acceptance"},
		{"decrypt", decryptPath(leadA, principalA, "ssn")},
		{"sam_page_1", samPath(leadA.String()) + "?page=1&size=20"},
		{"sam_page_12", samPath(leadA.String()) + "?page=12&size=20"},
		{"healthz", "/healthz"},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, c.path, nil)
			req.Header.Set("Authorization", "Api-Key "+staffKey)
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

// BenchmarkDecryptParallel decrypts from many goroutines at once, as under load: their audit
// events share group commits, so this is the decrypt's cost per request where the audit trail's
// per-commit costs (the chain's head, the WAL pages of each index) are spread over a group.
//
//	go test ./internal/api -run '^$' -bench DecryptParallel -count 5
func BenchmarkDecryptParallel(b *testing.B) {
	st := testdb.Open(b, "sqlite")
	st.SetClock(func() time.Time { return fixtureNow })
	ring := testdb.Ring(b)
	if _, err := dataset.Import(context.Background(), st, fixture(), ring); err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	h := api.New(api.Deps{Store: st, Ring: ring, Pusher: push.New(push.Config{Store: st, Logger: log}), Logger: log,
		Limits: api.Limits{Rate: 1e9, Burst: 1e9, FailureRate: 1, FailureBurst: 10}})
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		req := httptest.NewRequest(http.MethodGet, decryptPath(leadA, principalA, "ssn"), nil)
		req.Header.Set("Authorization", "Api-Key "+staffKey)
		for pb.Next() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("%d %s", rec.Code, rec.Body)
			}
		}
	})
}
