package domain

import (
	"context"
	"sync"
)

// A request's reads may be answered from a cache that is checked against the database before
// each use (one small read). ShareFreshness lets the reads of one request share that
// check: the first read makes it, the others reuse its outcome, so every read of the request sees
// the database as it was when the request's first read began, or later, as if uncached. A write
// made with the context forgets the check, so a read after the request's own write checks again.
func ShareFreshness(ctx context.Context) context.Context {
	return context.WithValue(ctx, freshnessKey{}, &Freshness{})
}

// FreshnessOf is the check shared by ctx's reads, nil when the context shares none.
func FreshnessOf(ctx context.Context) *Freshness {
	f, _ := ctx.Value(freshnessKey{}).(*Freshness)
	return f
}

type freshnessKey struct{}

// Freshness holds the outcome of a request's check: the database's version when it was made.
type Freshness struct {
	mu      sync.Mutex
	version int64
	checked bool // a check read version after the request began, and the request has not written since
}

// Version is the version checked, if a check was made since the request last wrote.
func (f *Freshness) Version() (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version, f.checked
}

// Remember keeps the version a check found.
func (f *Freshness) Remember(version int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version, f.checked = version, true
}

// Forget drops the check: the request has written.
func (f *Freshness) Forget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checked = false
}
