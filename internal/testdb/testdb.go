// Package testdb gives tests a fresh, migrated store of each engine: SQLite always, PostgreSQL
// when BACKOFFICE_TEST_POSTGRES_URL is set (each test in its own fresh database or schema), and
// PostgreSQL again through a transaction-mode pooler when BACKOFFICE_TEST_PGBOUNCER_URL is set too.
package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, for creating and dropping databases

	"backoffice/internal/auditlog"
	"backoffice/internal/store"
)

// PostgresURLVar names the variable that enables the PostgreSQL half of the tests.
const PostgresURLVar = "BACKOFFICE_TEST_POSTGRES_URL"

// PgBouncerURLVar names the variable that runs the PostgreSQL tests a second time, through
// PgBouncer in transaction mode in front of the same server (.ci/run starts one and sets it). The
// pooler must reach every database of that server under its own name (a "*" database entry), as
// each test makes its own database directly and reaches it through the pooler.
const PgBouncerURLVar = "BACKOFFICE_TEST_PGBOUNCER_URL"

// Engines lists the engines to run against: "pgbouncer" is PostgreSQL through the pooler.
func Engines() []string {
	return []string{"sqlite", "postgres", "pgbouncer"}
}

// PostgresEngines lists the engines on PostgreSQL: reached directly, and through the pooler.
func PostgresEngines() []string {
	return []string{"postgres", "pgbouncer"}
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
	return OpenURL(t, URL(t, engine))
}

// OpenURL opens the database of url as Open does: migrated, its audit events chained under the
// test ring, closed when the test ends.
func OpenURL(t testing.TB, url string, opts ...store.Option) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url, opts...)
	if err != nil {
		t.Fatalf("open %s: %v", strings.Split(url, ":")[0], err)
	}
	t.Cleanup(func() { st.Close() })
	remember(t, st, url)
	// Audit events are chained under the master key ring; the tests' stores use the default test
	// ring's key, as a service started with testdb.Ring does.
	st.SetChainSigner(Ring(t))
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate %s: %v", strings.Split(url, ":")[0], err)
	}
	// and, as a store opened with the ring does, build the audit tree of events written before it,
	if _, err := st.BuildAuditTree(context.Background()); err != nil {
		t.Fatalf("build the audit tree %s: %v", strings.Split(url, ":")[0], err)
	}
	// and, as serve does at start, seal where the audit chain begins.
	if _, err := st.SealUnsealedAuditGenesis(context.Background(), Ring(t), func() ([]auditlog.ChainExpect, bool, error) { return nil, true, nil }); err != nil {
		t.Fatalf("seal the audit genesis %s: %v", strings.Split(url, ":")[0], err)
	}
	return st
}

// OpenAsIs opens the database at url as it is (migrated, with no chain signer), closed when the
// test ends: a second process on a database a test made.
func OpenAsIs(t testing.TB, url string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { st.Close() })
	remember(t, st, url)
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
		return freshPostgres(t, postgresBase(t))
	case "pgbouncer":
		pooler := os.Getenv(PgBouncerURLVar)
		if pooler == "" {
			t.Skipf("PostgreSQL tests through PgBouncer skipped: set %s (and %s) to run them", PgBouncerURLVar, PostgresURLVar)
		}
		return withDatabase(t, pooler, freshDatabase(t, postgresBase(t)))
	}
	t.Fatalf("unknown engine %q", engine)
	return ""
}

// postgresBase is the URL of the PostgreSQL server the tests make their databases on, or skips.
func postgresBase(t testing.TB) string {
	t.Helper()
	base := os.Getenv(PostgresURLVar)
	if base == "" {
		t.Skipf("PostgreSQL tests skipped: set %s to run them", PostgresURLVar)
	}
	return base
}

// freshPostgres returns the base URL pointed at a fresh database (freshDatabase).
func freshPostgres(t testing.TB, base string) string {
	t.Helper()
	return withDatabase(t, base, freshDatabase(t, base))
}

// withDatabase is the postgres:// URL server with its database replaced by name.
func withDatabase(t testing.TB, server, name string) string {
	t.Helper()
	u, err := url.Parse(server)
	if err != nil {
		t.Fatalf("%q is not a postgres:// URL: %v", server, err)
	}
	u.Path = "/" + name
	return u.String()
}

// freshDatabase creates an empty database for this test alone, named at random so that tests,
// packages and whole runs in parallel never meet, and drops it (FORCE: closing any session a
// failed test left behind, a pooler's included) when the test ends. It returns its name.
func freshDatabase(t testing.TB, base string) string {
	t.Helper()
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
	return name
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
