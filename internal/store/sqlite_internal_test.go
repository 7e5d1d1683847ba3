package store

import (
	"context"
	"errors"
	"testing"
)

// A SQLite database locked past the busy timeout by another process reads as unavailable (503),
// not as our own fault (500).
func TestSQLiteBusyIsUnavailable(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	a, err := Open(ctx, "sqlite:"+dir+"/busy.db")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// Hold the write lock on one connection of a second pool, as another process would.
	b, err := Open(ctx, "sqlite:"+dir+"/busy.db")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	conn, err := b.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, "ROLLBACK")
	a.db.SetMaxOpenConns(1) // one connection, so the pragma below applies to the insert's
	if _, err := a.db.ExecContext(ctx, "PRAGMA busy_timeout = 1"); err != nil {
		t.Fatal(err)
	}
	_, err = a.q().exec(ctx, `INSERT INTO partners (id, name) VALUES (?, ?)`, "00000000-0000-4000-8000-000000000001", "p")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("insert into a locked database: %v, want ErrUnavailable", err)
	}
}

// A transaction is rolled back when its function fails or panics: nothing of it stays.
func TestTxRollsBackOnErrorAndPanic(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, "sqlite:"+t.TempDir()+"/tx.db")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	insert := func(q querier) error {
		_, err := q.exec(ctx, `INSERT INTO partners (id, name) VALUES (?, ?)`, "00000000-0000-4000-8000-000000000001", "p")
		return err
	}
	failed := errors.New("fails after the insert")
	if err := s.tx(ctx, func(q querier) error { _ = insert(q); return failed }); !errors.Is(err, failed) {
		t.Fatalf("tx error %v", err)
	}
	func() {
		defer func() { _ = recover() }()
		_ = s.tx(ctx, func(q querier) error { _ = insert(q); panic("boom") })
	}()
	if empty, err := s.IsEmpty(ctx); err != nil || !empty {
		t.Fatalf("after a failed and a panicking transaction: empty=%v, %v", empty, err)
	}
}
