package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
)

// ChangeCounter tells whether the database changed, through SQLite's documented PRAGMA
// data_version: on a connection of its own, its value changes whenever any other connection
// commits, whether another connection of this process's pool or one of another process (a CLI
// command, the sqlite3 shell, another serve). Its own commits do not change it: the store writes
// the audit trail, which no cached read reads, on this connection (DB), and nothing else. A read cache files an answer under the value read before its query ran and serves it
// only while a fresh read gives the same value.
type ChangeCounter struct {
	db *sql.DB // one connection, outside the store's pool
	mu sync.Mutex
	st *sql.Stmt
	// started counts the reads begun (under mu); last and ok are the latest read's outcome.
	started atomic.Uint64
	last    int64
	ok      bool
}

// ChangeCounter opens the counter's connection (closed by ChangeCounter.Close).
func (e Engine) ChangeCounter(ctx context.Context) (*ChangeCounter, error) {
	db, err := sql.Open("sqlite", e.counterDSN)
	if err != nil {
		return nil, fmt.Errorf("sqlite: change counter: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	st, err := db.PrepareContext(ctx, "PRAGMA data_version")
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: change counter: %w", err)
	}
	return &ChangeCounter{db: db, st: st}, nil
}

// Version reads the data version. The reads run one at a time; a caller that finds, once its turn
// comes, that a read began after it called and has finished takes that read's value instead of
// making another: that read saw every commit made before the caller called, which is all the
// caller needs. Under concurrency most callers so share a read rather than queue for their own.
func (c *ChangeCounter) Version(ctx context.Context) (int64, error) {
	arrived := c.started.Load()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started.Load() > arrived && c.ok {
		return c.last, nil
	}
	c.started.Add(1)
	c.ok = false
	if err := c.st.QueryRowContext(ctx).Scan(&c.last); err != nil {
		return 0, fmt.Errorf("sqlite: data version: %w", err)
	}
	c.ok = true
	return c.last, nil
}

// DB is the counter's connection, for writes that no cached read depends on (the audit trail):
// its own commits leave the data version as it was, as SQLite documents. A transaction on it
// holds the connection, so Version waits for its commit; never call Version inside one. It does
// not wait for another process's write lock (busy timeout 0): a writer retries instead, so that
// no Version waits behind another process's import.
func (c *ChangeCounter) DB() *sql.DB { return c.db }

// Close releases the counter's connection.
func (c *ChangeCounter) Close() error {
	c.st.Close()
	return c.db.Close()
}
