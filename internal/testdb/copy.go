package testdb

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Copy returns the URL of a fresh database of the engine holding what the database of from holds
// now (from: a URL this package gave for the engine, or for "postgres" when engine is
// "pgbouncer"), dropped when the test ends: many tests of one prepared state without preparing it
// each time. SQLite copies with VACUUM INTO (the file's own copy, never its WAL read by hand);
// PostgreSQL makes the new database from the old as a template, which needs the old one to have
// no session: its sessions are ended first, so no store may be using it.
func Copy(t testing.TB, engine, from string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if engine == "sqlite" {
		to := filepath.Join(t.TempDir(), "copy.db")
		if _, err := SQL(t, from).ExecContext(ctx, `VACUUM INTO ?`, to); err != nil {
			t.Fatalf("copy %s: %v", from, err)
		}
		return "sqlite:" + to
	}
	base := postgresBase(t)
	u, err := url.Parse(from)
	if err != nil {
		t.Fatal(err)
	}
	TerminateBackends(t, from)
	name := "bo_test_" + randomHex(t, 8)
	db := adminDB(t, base)
	// Both names are ours, made of [a-z0-9_]: safe to splice into DDL, which takes no parameters.
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name+" TEMPLATE "+strings.TrimPrefix(u.Path, "/")); err != nil {
		t.Fatalf("copy %s: %v", u.Path, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	if engine == "pgbouncer" {
		pooler := os.Getenv(PgBouncerURLVar)
		if pooler == "" {
			t.Skipf("PostgreSQL tests through PgBouncer skipped: set %s (and %s) to run them", PgBouncerURLVar, PostgresURLVar)
		}
		return withDatabase(t, pooler, name)
	}
	return withDatabase(t, base, name)
}
