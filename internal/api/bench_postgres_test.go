package api_test

import (
	"testing"
)

// BenchmarkOperationsPostgres is BenchmarkOperations's read operations on PostgreSQL (skipped
// without BACKOFFICE_TEST_POSTGRES_URL): the service's own cost per request plus the database's,
// both on this machine, each request checking the read cache's generation.
func BenchmarkOperationsPostgres(b *testing.B) {
	st, ring := fixtureStore(b, "postgres")
	h := benchHandler(st, st, ring, nil)
	for _, c := range []struct{ name, path string }{
		{"acceptance", "/v1/crm/leads/" + leadA.String() + "/service-acceptance"},
		{"decrypt", decryptPath(leadA, principalA, "ssn")},
		{"sam_page_1", samPath(leadA.String()) + "?page=1&size=20"},
	} {
		b.Run(c.name, func(b *testing.B) { serveLoop(b, h, c.path) })
	}
}

// BenchmarkDecryptParallelPostgres is BenchmarkDecryptParallel on PostgreSQL.
func BenchmarkDecryptParallelPostgres(b *testing.B) {
	st, ring := fixtureStore(b, "postgres")
	h := benchHandler(st, st, ring, nil)
	serveParallel(b, h, decryptPath(leadA, principalA, "ssn"))
}
