package testdb

import (
	"context"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Filler takes a filesystem's free space, a chunk at a time, with a file of its own.
type Filler struct {
	f *os.File
}

// NewFiller makes the filler's file in dir; it is removed when the test ends.
func NewFiller(t *testing.T, dir string) *Filler {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &Filler{f: f}
}

// Take writes up to n more bytes and syncs them; full is true once the filesystem refused some.
func (fl *Filler) Take(t *testing.T, n int) (full bool) {
	t.Helper()
	_, err := fl.f.Write(make([]byte, n))
	if err == nil {
		err = fl.f.Sync()
	}
	if errors.Is(err, syscall.ENOSPC) {
		return true
	}
	if err != nil {
		t.Fatalf("fill: %v", err)
	}
	return false
}

// Free gives all the space back.
func (fl *Filler) Free(t *testing.T) {
	t.Helper()
	if err := fl.f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if _, err := fl.f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
}

// PostgresIn returns the URL of a fresh PostgreSQL database whose tablespace is in dir, where
// its tables and their growth go (its write-ahead log stays in the server's own folder). That
// needs the server on this host, running as the user postgres, and a superuser URL: skipped
// otherwise. The database and its tablespace are dropped when the test ends.
func PostgresIn(t *testing.T, dir string) string {
	t.Helper()
	base := postgresBase(t)
	db := adminDB(t, base)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var dataDir string
	if err := db.QueryRowContext(ctx, "SHOW data_directory").Scan(&dataDir); err != nil {
		t.Skipf("the PostgreSQL server does not say where its data is (%v): a tablespace needs a superuser", err)
	}
	if _, err := os.Stat(dataDir); err != nil {
		t.Skipf("the PostgreSQL server's data (%s) is not on this host: a tablespace here would not be its", dataDir)
	}
	owner, err := user.Lookup("postgres")
	if err != nil {
		t.Skipf("no user postgres on this host to own the tablespace: %v", err)
	}
	uid, _ := strconv.Atoi(owner.Uid)
	gid, _ := strconv.Atoi(owner.Gid)
	location := filepath.Join(dir, "tablespace")
	if err := os.Mkdir(location, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(location, uid, gid); err != nil {
		t.Fatal(err)
	}
	name := "bo_full_" + randomHex(t, 8)
	// The names are ours, made of [a-z0-9_], and the location a path we made: DDL takes no parameters.
	if _, err := db.ExecContext(ctx, "CREATE TABLESPACE "+name+" LOCATION '"+location+"'"); err != nil {
		t.Skipf("cannot make a tablespace in %s: %v", location, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
		if _, err := db.ExecContext(ctx, "DROP TABLESPACE IF EXISTS "+name); err != nil {
			t.Errorf("drop tablespace %s: %v", name, err)
		}
	})
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name+" TABLESPACE "+name); err != nil {
		t.Fatalf("create a database in the tablespace: %v", err)
	}
	return withDatabase(t, base, name)
}
