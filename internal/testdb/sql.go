package testdb

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"
	"time"

	"backoffice/internal/store"
	"backoffice/internal/store/postgres"
	"backoffice/internal/store/sqlite"
)

// SQL opens a pool of its own on the database of url, closed when the test ends: what psql or the
// sqlite3 shell would be beside the service, for a test that reads or writes rows as the service
// never would (an attacker's change, an older release's rows). It connects as the store's engine
// package does (SQLite's busy timeout, PostgreSQL's statements sent as text), never through a
// store: the store hands out no pool.
func SQL(t testing.TB, url string) *sql.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var db *sql.DB
	var err error
	switch {
	case strings.HasPrefix(url, "sqlite:"):
		var e sqlite.Engine
		db, e, err = sqlite.Open(ctx, strings.TrimPrefix(url, "sqlite:"), false)
		if err == nil {
			t.Cleanup(e.Close)
		}
	default:
		db, _, err = postgres.Open(ctx, url)
	}
	if err != nil {
		t.Fatalf("open %s: %v", strings.Split(url, ":")[0], err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// opened holds each store this package opened (Open, OpenURL, OpenAsIs), for SQLOf.
var opened sync.Map // *store.Store → *openedStore

// openedStore is where a store this package opened is, and the one pool SQLOf gives for it.
type openedStore struct {
	t    testing.TB // the test that opened it, whose end closes the pool
	url  string
	once sync.Once
	db   *sql.DB
}

// SQLOf is SQL on the database of a store this package opened: one pool per store, closed when
// the test that opened the store ends.
func SQLOf(t testing.TB, st *store.Store) *sql.DB {
	t.Helper()
	o, ok := opened.Load(st)
	if !ok {
		t.Fatal("testdb.SQLOf: a store testdb did not open; use testdb.SQL with its URL")
	}
	e := o.(*openedStore)
	e.once.Do(func() { e.db = SQL(e.t, e.url) })
	return e.db
}

// URLOf is the database URL of a store this package opened: a second process on its database.
func URLOf(t testing.TB, st *store.Store) string {
	t.Helper()
	o, ok := opened.Load(st)
	if !ok {
		t.Fatal("testdb.URLOf: a store this package did not open")
	}
	return o.(*openedStore).url
}

// remember files st for SQLOf until the test that opened it ends.
func remember(t testing.TB, st *store.Store, url string) {
	opened.Store(st, &openedStore{t: t, url: url})
	t.Cleanup(func() { opened.Delete(st) })
}
