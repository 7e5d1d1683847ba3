package auditlog

import (
	"context"
	"database/sql"
	"io/fs"
	"slices"
	"sync"
	"testing"

	"backoffice/internal/sqltx"
	"backoffice/internal/store/sqlite"
)

// testDB is a migrated SQLite database and the pool the trail runs on, as the store hands them
// to it, for the tests of this package's internals; the store's tests run the trail on both
// engines.
type testDB struct {
	*sqltx.DB
	db     *sql.DB
	engine sqlite.Engine
}

// openTestDB is a migrated SQLite database in a folder of the test's.
func openTestDB(t testing.TB, name string) *testDB {
	t.Helper()
	ctx := context.Background()
	db, e, err := sqlite.Open(ctx, t.TempDir()+"/"+name, true)
	if err != nil {
		t.Fatal(err)
	}
	d := &testDB{DB: sqltx.NewDB(db, e, sqltx.Pool{MaxIdle: 2, LostTries: 1}), db: db, engine: e}
	t.Cleanup(func() {
		d.DB.Close()
		e.Close()
		db.Close()
	})
	names, err := fs.Glob(e.Migrations(), "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	for _, name := range names {
		body, err := fs.ReadFile(e.Migrations(), name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, string(body)); err != nil {
			t.Fatalf("migration %s: %v", name, err)
		}
	}
	return d
}

// readyTogether runs fn on n goroutines made ready to run at the same moment, and waits for them.
func readyTogether(n int, fn func()) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			<-start
			fn()
		})
	}
	close(start)
	wg.Wait()
}
