package store

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache keeps one prepared statement per query text the pool runs outside transactions: the
// per-request reads (credentials, visibility, the SAM log page) would otherwise be parsed and
// planned on every call, which on SQLite is most of their cost. The texts are the store's own
// constants, so the cache stays small.
type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func newStmtCache(db *sql.DB) *stmtCache { return &stmtCache{db: db, m: map[string]*sql.Stmt{}} }

// get returns the statement for text, preparing it on first use. Preparing is a round trip
// (and, with the database lost, a connect attempt), so it happens outside the lock: requests whose
// statements are cached never wait behind it. A failed prepare is not kept, so a statement that
// met a lost database is prepared again once it is back.
func (c *stmtCache) get(ctx context.Context, text string) (*sql.Stmt, error) {
	c.mu.Lock()
	st, ok := c.m[text]
	c.mu.Unlock()
	if ok {
		return st, nil
	}
	st, err := c.db.PrepareContext(ctx, text)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if first, ok := c.m[text]; ok { // prepared meanwhile by another request
		st.Close()
		return first, nil
	}
	c.m[text] = st
	return st, nil
}

// lookup returns the statement for text if one is prepared.
func (c *stmtCache) lookup(text string) (*sql.Stmt, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.m[text]
	return st, ok
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	clear(c.m)
}
