package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// ChangeCounter tells whether the database changed, through SQLite's documented PRAGMA
// data_version: on a connection of its own, its value changes whenever any other connection
// commits, whether another connection of this process's pool or one of another process (a CLI
// command, the sqlite3 shell, another serve). Its own commits do not change it: the store writes
// the audit trail, which no cached read reads, on this connection (DB), and nothing else. A read cache files an answer under the value read before its query ran and serves it
// only while a fresh read gives the same value.
type ChangeCounter struct {
	db   *sql.DB // one connection, outside the store's pool
	st   *sql.Stmt
	file *dbFile
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
	return &ChangeCounter{db: db, st: st, file: e.file}, nil
}

// Version reads the data version. The store calls it from one goroutine, which shares each read
// among the checks that arrived before it began.
//
// It fails first when the path no longer names the file that was opened (removed or replaced):
// every connection still reads the orphan, which no other process writes any more, so its version
// never moves and a cached answer (a key revoked in the new file, say) would be served for ever.
// Every request's first read makes this check, so no request is answered from the orphan; one
// os.Stat serves all the checks that share the read.
func (c *ChangeCounter) Version(ctx context.Context) (int64, error) {
	if c.file != nil {
		if err := c.file.check(); err != nil {
			return 0, err
		}
	}
	var v int64
	if err := c.st.QueryRowContext(ctx).Scan(&v); err != nil {
		return 0, fmt.Errorf("sqlite: data version: %w", err)
	}
	return v, nil
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
