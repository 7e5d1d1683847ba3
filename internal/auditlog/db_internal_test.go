package auditlog

import (
	"context"
	"database/sql"
	"io/fs"
	"slices"
	"sync"
	"testing"

	"backoffice/internal/store/sqlite"
	"backoffice/internal/store/sqltx"
)

// testDB is a migrated SQLite database as the store's plumbing hands it to the trail (DB), for the
// tests of this package's internals; the store's tests run the trail on both engines, through the
// store's own plumbing.
type testDB struct {
	db     *sql.DB
	engine sqlite.Engine
	stmts  *sqltx.Stmts
}

// openTestDB is a migrated SQLite database in a folder of the test's.
func openTestDB(t testing.TB, name string) *testDB {
	t.Helper()
	ctx := context.Background()
	db, e, err := sqlite.Open(ctx, t.TempDir()+"/"+name, true)
	if err != nil {
		t.Fatal(err)
	}
	d := &testDB{db: db, engine: e, stmts: sqltx.NewStmts(db, e.KeepsStatements())}
	t.Cleanup(func() {
		d.stmts.Close()
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

func (d *testDB) Engine() Engine { return d.engine }
func (d *testDB) Pool() Pool     { return testPool{d} }

func (d *testDB) Tx(ctx context.Context, fn func(q *sqltx.Tx) error) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	q := sqltx.New(tx, d.engine, asIs{}, d.stmts)
	if err := fn(q); err != nil {
		_ = tx.Rollback()
		q.End(false)
		return err
	}
	err = tx.Commit()
	q.End(err == nil)
	return err
}

func (d *testDB) Snapshot(ctx context.Context, fn func(q *sqltx.Tx) error) error {
	tx, err := d.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return fn(sqltx.New(tx, d.engine, asIs{}, nil))
}

func (d *testDB) Prepare(ctx context.Context, query string) error {
	_, err := d.stmts.Get(ctx, d.engine.Rebind(query))
	return err
}

func (d *testDB) LostConnection(context.Context, error) bool { return false }

// asIs classifies nothing: the test database is never lost.
type asIs struct{}

func (asIs) Classify(err error) error { return err }

// testPool is shared SQL on the test database's pool.
type testPool struct{ d *testDB }

func (p testPool) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return p.d.db.ExecContext(ctx, p.d.engine.Rebind(query), args...)
}

func (p testPool) Query(ctx context.Context, query string, args ...any) (*sqltx.Rows, error) {
	r, err := p.d.db.QueryContext(ctx, p.d.engine.Rebind(query), args...)
	if err != nil {
		return nil, err
	}
	return sqltx.NewRows(r, asIs{}), nil
}

func (p testPool) QueryRow(ctx context.Context, query string, args ...any) sqltx.Row {
	return sqltx.NewRow(ctx, p, query, args)
}

func (p testPool) ReadRow(ctx context.Context, query string, args, dest []any) error {
	return p.d.db.QueryRowContext(ctx, p.d.engine.Rebind(query), args...).Scan(dest...)
}

func (p testPool) WriteRow(ctx context.Context, query string, dest []any, args ...any) error {
	return p.ReadRow(ctx, query, args, dest)
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
