// Package testdb gives tests a fresh, migrated store of each engine: SQLite always, PostgreSQL
// when BACKOFFICE_TEST_POSTGRES_URL is set (each test in its own fresh database or schema).
package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, for creating and dropping databases

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
	// Audit events are chained under the master key ring; the tests' stores use the default test
	// ring's key, as a service started with testdb.Ring does.
	st.SetChainSigner(Ring(t))
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate %s: %v", engine, err)
	}
	// and, as serve does at start, seal where the audit chain begins.
	if _, _, err := st.SealAuditGenesis(context.Background(), true); err != nil {
		t.Fatalf("seal the audit genesis %s: %v", engine, err)
	}
	return st
}

// OpenURL opens the database at url as it is (migrated, with no chain signer), closed when the
// test ends: a second process on a database a test made.
func OpenURL(t testing.TB, url string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate: %v", err)
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

// freshPostgres creates an empty database for this test alone, named at random so that tests,
// packages and whole runs in parallel never meet, and drops it (FORCE: closing any session a
// failed test left behind) when the test ends. It returns the base URL pointed at it.
func freshPostgres(t testing.TB, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s is not a postgres:// URL: %v", PostgresURLVar, err)
	}
	db := adminDB(t, base)
	name := "bo_test_" + randomHex(t, 8)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The name is ours, made of [a-z0-9_]: safe to splice into DDL, which takes no parameters.
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// admin is one small pool on the base database per test process, shared by every test that
// creates or drops a database.
var admin struct {
	once sync.Once
	db   *sql.DB
	err  error
}

func adminDB(t testing.TB, base string) *sql.DB {
	t.Helper()
	admin.once.Do(func() {
		admin.db, admin.err = sql.Open("pgx", base)
		if admin.err == nil {
			admin.db.SetMaxOpenConns(4)
			admin.err = admin.db.Ping()
		}
	})
	if admin.err != nil {
		t.Fatalf("connect to %s: %v", PostgresURLVar, admin.err)
	}
	return admin.db
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
