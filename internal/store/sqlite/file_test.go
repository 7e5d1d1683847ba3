package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// openDocs creates a database holding one document with content, in a folder of its own; path
// names its file.
func openDocs(t *testing.T, content []byte) (*sql.DB, Engine, string) {
	t.Helper()
	ctx := context.Background()
	db, e, path := createTemp(t)
	for _, q := range []string{`CREATE TABLE docs (id INTEGER PRIMARY KEY, content BLOB NOT NULL)`, `INSERT INTO docs (id, content) VALUES (1, ?)`} {
		if _, err := db.ExecContext(ctx, q, content); err != nil {
			t.Fatal(err)
		}
	}
	return db, e, path
}

// filesHolding names the files of dir that contain b.
func filesHolding(t *testing.T, dir string, b []byte) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	var holding []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, b) {
			holding = append(holding, filepath.Base(f))
		}
	}
	return holding
}

// PurgeDeleted does not checkpoint on the caller: with a reader holding an old snapshot (an
// export, say), a checkpoint that truncates would wait for it with the write lock held. Once the
// reader leaves, the background checkpoint takes the deleted bytes out of every file, while the
// database stays open.
func TestPurgeDeletedWaitsForNoReader(t *testing.T) {
	ctx := context.Background()
	secret := []byte("UNIQUE-DOCUMENT-CONTENT-5d81e2")
	db, e, path := openDocs(t, secret)
	dir := filepath.Dir(path)
	// One connection, whose busy timeout is past any test's time limit: a purge that waited for
	// the reader below would never return.
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, "PRAGMA busy_timeout = 2147483647"); err != nil {
		t.Fatal(err)
	}
	other, oe, err := Open(ctx, path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { oe.Close(); other.Close() }()
	snap, err := other.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := snap.QueryRowContext(ctx, `SELECT count(*) FROM docs`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("reader: %d documents, %v", n, err)
	}

	if _, err := db.ExecContext(ctx, `DELETE FROM docs WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	e.PurgeDeleted(ctx, db)
	if held := filesHolding(t, dir, secret); len(held) == 0 {
		t.Fatal("the deleted bytes left the files while a reader still held them: the checkpoint ran on the caller")
	}
	snap.Rollback()
	e.purger.wait(e.purger.kick(db))
	if held := filesHolding(t, dir, secret); len(held) > 0 {
		t.Errorf("%s still hold the deleted document's bytes", strings.Join(held, ", "))
	}
}

// The database file and the files SQLite makes beside it are readable by their owner only.
func TestFilesAreCreated0600(t *testing.T) {
	_, _, path := openDocs(t, []byte("content"))
	files, _ := filepath.Glob(path + "*")
	if len(files) < 3 {
		t.Fatalf("files %v, want the database, -wal and -shm", files)
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", filepath.Base(f), fi.Mode().Perm())
		}
	}
}

// Without create no file is made: the open fails with one line naming the path.
func TestOpenWithoutCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.db")
	_, _, err := Open(context.Background(), path, false)
	if err == nil || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("open of a missing file: %v, want one line naming %s", err, path)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the open created %s: %v", path, err)
	}
}

// BeforeWrite fails once the path names no file, or another one; no connection makes a new
// empty file where the old one was.
func TestBeforeWriteTellsARemovedFile(t *testing.T) {
	ctx := context.Background()
	db, e, path := openDocs(t, []byte("content"))
	if err := e.BeforeWrite(); err != nil {
		t.Fatalf("healthy file: %v", err)
	}
	os.Remove(path)
	if err := e.BeforeWrite(); err == nil {
		t.Error("removed file: no error")
	}
	// Replaced while the store's connections keep the old file open.
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.BeforeWrite(); err == nil {
		t.Error("replaced file: no error")
	}
	os.Remove(path)
	db.SetMaxIdleConns(0) // the next statement opens a new connection
	_ = db.PingContext(ctx)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a connection created %s again: %v", path, err)
	}
}
