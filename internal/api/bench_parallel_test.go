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

// BenchmarkReadsParallel serves service acceptance and SAM page 1 from 16 goroutines per core at
// once, as under load: the requests' checks of the read cache run side by side.
func BenchmarkReadsParallel(b *testing.B) {
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
		{"sam_page_1", samPath(leadA.String()) + "?page=1&size=20"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				req := httptest.NewRequest(http.MethodGet, c.path, nil)
				req.Header.Set("Authorization", "Api-Key "+staffKey)
				for pb.Next() {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatalf("%d %s", rec.Code, rec.Body)
					}
				}
			})
		})
	}
}
