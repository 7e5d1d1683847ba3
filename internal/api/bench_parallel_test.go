package api_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkReadsParallel serves service acceptance and SAM page 1 from 16 goroutines per core at
// once, as under load: the requests' checks of the read cache run side by side.
func BenchmarkReadsParallel(b *testing.B) {
	st, ring := fixtureStore(b, "sqlite")
	h := benchHandler(st, st, ring, nil)
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
