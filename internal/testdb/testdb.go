// Package testdb gives tests a fresh, migrated store of each engine: SQLite always, PostgreSQL
// when BACKOFFICE_TEST_POSTGRES_URL is set (each test in its own fresh database or schema).
package testdb

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"backoffice/internal/store"
)

// PostgresURLVar names the variable that enables the PostgreSQL half of the tests.
const PostgresURLVar = "BACKOFFICE_TEST_POSTGRES_URL"

// Engines lists the engines to run against.
func Engines() []string {
	return []string{"sqlite", "postgres"}
}

// ForEach runs fn as a subtest per engine, each with a fresh store. Engines that are not
// available here are skipped, saying why.
func ForEach(t *testing.T, fn func(t *testing.T, st *store.Store)) {
	t.Helper()
	for _, engine := range Engines() {
		t.Run(engine, func(t *testing.T) {
			fn(t, Open(t, engine))
		})
	}
}

// Open returns a fresh migrated store of the engine, closed when the test ends.
func Open(t testing.TB, engine string) *store.Store {
	t.Helper()
	url := URL(t, engine)
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("open %s: %v", engine, err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate %s: %v", engine, err)
	}
	return st
}

// URL returns the database URL of a fresh, empty database of the engine.
func URL(t testing.TB, engine string) string {
	t.Helper()
	switch engine {
	case "sqlite":
		return "sqlite:" + filepath.Join(t.TempDir(), "test.db")
	case "postgres":
		base := os.Getenv(PostgresURLVar)
		if base == "" {
			t.Skipf("PostgreSQL tests skipped: set %s to run them", PostgresURLVar)
		}
		return freshPostgres(t, base)
	}
	t.Fatalf("unknown engine %q", engine)
	return ""
}

// freshPostgres is completed with the PostgreSQL store.
func freshPostgres(t testing.TB, base string) string {
	t.Skip("PostgreSQL store not built yet")
	return ""
}
