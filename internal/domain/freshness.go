package domain

import (
	"context"
	"errors"
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

// CheckAtCommit is ShareFreshness for a request that answers only after an audit event of its
// own is committed (a decrypt): its reads may take the cache's answers without a check, under
// the version the cache holds (Assume), and its audit event is written only if that version is
// still the database's when the event is committed, which is after the request began. Otherwise
// nothing is written and the commit fails with ErrStale: the request is then run again from the
// start with checked reads (ShareFreshness), having answered nothing.
func CheckAtCommit(ctx context.Context) context.Context {
	return context.WithValue(ctx, freshnessKey{}, &Freshness{atCommit: true})
}

// ErrStale is the audit commit of a request that read under CheckAtCommit, refused: what its
// reads read changed before the commit (nothing was written).
var ErrStale = errors.New("what the request read changed before its audit event was committed")

// FreshnessOf is the check shared by ctx's reads, nil when the context shares none.
func FreshnessOf(ctx context.Context) *Freshness {
	f, _ := ctx.Value(freshnessKey{}).(*Freshness)
	return f
}

type freshnessKey struct{}

// Freshness holds the outcome of a request's check: the database's version when it was made; or,
// under CheckAtCommit, the version its reads assumed, which its audit commit checks.
type Freshness struct {
	mu       sync.Mutex
	version  int64
	state    freshnessState
	atCommit bool // the request's audit commit checks its reads (CheckAtCommit)
}

// freshnessState is what version holds.
type freshnessState uint8

const (
	unchecked freshnessState = iota // nothing yet, or the request wrote since its check
	checked                         // a check read it after the request began
	assumed                         // taken from the cache unchecked: the audit commit checks it
)

// Version is the version checked, if a check was made since the request last wrote.
func (f *Freshness) Version() (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version, f.state == checked
}

// Remember keeps the version a check found, unless the request's reads assumed one already.
func (f *Freshness) Remember(version int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state != assumed {
		f.version, f.state = version, checked
	}
}

// Forget drops the check: the request has written. An assumed version stays: the audit commit
// checks it, and the request's own write made it stale, so the request runs again, checked.
func (f *Freshness) Forget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state == checked {
		f.state = unchecked
	}
}

// AtCommit reports whether the request's reads may assume a version (CheckAtCommit) that none
// of its reads has checked.
func (f *Freshness) AtCommit() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.atCommit && f.state != checked
}

// Assume fixes the version the request's reads take unchecked, the first time it is called,
// and returns the version fixed.
func (f *Freshness) Assume(version int64) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state == unchecked {
		f.version, f.state = version, assumed
	}
	return f.version
}

// Assumed is the version the request's reads assumed unchecked, which its audit commit must
// find (ok false when none did).
func (f *Freshness) Assumed() (version int64, ok bool) {
	if f == nil {
		return 0, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version, f.state == assumed
}
