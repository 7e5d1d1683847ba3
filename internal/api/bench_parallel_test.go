package api_test

import (
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
		b.Run(c.name, func(b *testing.B) { serveParallel(b, h, c.path) })
	}
}
