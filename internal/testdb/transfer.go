package testdb

import (
	"context"
	"testing"

	"backoffice/internal/dataset"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
)

// Import imports ds with the test ring, failing the test on any error.
func Import(t testing.TB, st *store.Store, ds *dataset.Dataset) {
	t.Helper()
	if _, err := dataset.Import(context.Background(), st, ds, Ring(t)); err != nil {
		t.Fatalf("import: %v", err)
	}
}

// Export exports the whole database (SSNs only with a ring), failing the test on any error.
func Export(t testing.TB, st *store.Store, ring *secrets.Ring) *dataset.Dataset {
	t.Helper()
	ds, err := dataset.Export(context.Background(), st, ring)
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	return ds
}
