package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// The embedded store runs as the team's style asks: WAL, foreign keys enforced, a busy timeout,
// deleted content overwritten, and every commit synced to disk before it returns (FULL: an audit
// event acknowledged to a decrypt survives a power loss, which NORMAL does not promise in WAL mode).
func TestSQLiteSettings(t *testing.T) {
	ctx := context.Background()
	db, _, _ := createTemp(t)
	want := map[string]string{"journal_mode": "wal", "foreign_keys": "1", "busy_timeout": "10000", "secure_delete": "1", "synchronous": "2"}
	for pragma, value := range want {
		var got string
		if err := db.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != value {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, value)
		}
	}
}

// The errors of a database that takes no write (full, read-only) read as unwritable, from the
// driver's own errors; a constraint does not.
func TestUnwritableErrors(t *testing.T) {
	ctx := context.Background()
	db, e, path := createTemp(t)
	db.SetMaxOpenConns(1) // the pragma below holds for the connection that inserts
	for _, q := range []string{`CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB)`, `INSERT INTO t VALUES (1, x'00')`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	_, dup := db.ExecContext(ctx, `INSERT INTO t VALUES (1, x'00')`)

	// SQLite's documented cap on a database's pages fails a write as a full disk does.
	if _, err := db.ExecContext(ctx, `PRAGMA max_page_count = 1`); err != nil {
		t.Fatal(err)
	}
	_, full := db.ExecContext(ctx, `INSERT INTO t VALUES (2, zeroblob(100000))`)

	ro, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, readOnly := ro.ExecContext(ctx, `INSERT INTO t VALUES (3, x'00')`)

	for name, err := range map[string]error{"full": full, "read-only": readOnly} {
		if err == nil {
			t.Fatalf("%s: the write succeeded", name)
		}
		if !e.IsUnwritable(fmt.Errorf("wrapped: %w", err)) {
			t.Errorf("%s: IsUnwritable(%v) = false", name, err)
		}
		if e.IsBusy(err) || e.IsUniqueViolation(err) {
			t.Errorf("%s: %v also reads as busy or a unique violation", name, err)
		}
	}
	if got := openError("x.db", full).Error(); !strings.Contains(got, "is its disk full") {
		t.Errorf("opening a full database: %q, want a hint at the disk", got)
	}
	if got := openError("x.db", dup).Error(); strings.Contains(got, "disk full") {
		t.Errorf("%q: a hint at the disk for an error that is not about it", got)
	}
	if dup == nil || !e.IsUniqueViolation(dup) || e.IsUnwritable(dup) {
		t.Errorf("duplicate key: %v: want a unique violation, not unwritable", dup)
	}
	if e.IsUnwritable(errors.New("not sqlite's")) {
		t.Error("IsUnwritable of a non-SQLite error")
	}
}

// createTemp creates a database in a folder of its own, closed with its engine when the test ends;
// path names its file for other connections.
func createTemp(t *testing.T) (db *sql.DB, e Engine, path string) {
	t.Helper()
	path = t.TempDir() + "/test.db"
	db, e, err := Open(context.Background(), path, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(); db.Close() })
	return db, e, path
}
