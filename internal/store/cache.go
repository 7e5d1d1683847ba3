package store

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// readCache keeps the results of the hot read lookups (credentials, service acceptances,
// principals' sealed SSNs, SAM log pages) for exactly as long as the database is unchanged.
//
// "Unchanged" is read off SQLite's WAL-index header (walIndex), which every commit of every
// connection in every process rewrites: a lookup first reads the header, and a result cached
// under any other header is never used. So a revocation by `backoffice apikey revoke`, an import
// or a rewrap in another process holds from the next request on, exactly as without the cache;
// the cache only saves the statements of requests that change nothing.
//
// Entries are filed under the header read before their statement ran. A commit landing between
// that reading and the statement makes the entry newer than its header says, never older, and
// the header has moved on by then, so nobody reads it.
//
// PostgreSQL has no such shared counter, so its stores run without a cache (cache is nil):
// replicas answer from the database on every request.
type readCache struct {
	wal   *walIndex
	limit int64
	gen   atomic.Pointer[cacheGen]
	// pending counts audit transactions between mark and ownCommit.
	pending atomic.Int32
}

// cacheGen is the cache for one state of the database: one header. prev and prevHdr are the
// entries of the generation it replaced, kept for ownCommit.
type cacheGen struct {
	hdr walHeader
	*cacheEntries
	prevHdr walHeader
	prev    *cacheEntries
}

type cacheEntries struct {
	m sync.Map
	n atomic.Int64
}

// defaultCacheWeight bounds the cache, in units of about 200 bytes: an entry weighs 1, plus 1 per
// SAM log or card plan it holds (see weigher), so a generation holds at most about 10 MiB. A full
// generation is dropped whole, not evicted entry by entry; with the one it replaced (kept for
// ownCommit) that is about 20 MiB at most.
const defaultCacheWeight = 50_000

// weigher is implemented by cached values that hold a list.
type weigher interface{ cacheWeight() int64 }

func weightOf(v any) int64 {
	if w, ok := v.(weigher); ok {
		return w.cacheWeight()
	}
	return 1
}

func newReadCache(wal *walIndex, limit int64) *readCache {
	return &readCache{wal: wal, limit: limit}
}

// current returns the generation of the database's present state, starting a new one when the
// database has changed, or nil while the header cannot be read.
func (c *readCache) current() *cacheGen {
	h, ok := c.wal.header()
	if !ok {
		return nil
	}
	for waits := 0; ; {
		g := c.gen.Load()
		if g != nil && g.hdr == h {
			return g
		}
		if c.pending.Load() > 0 && waits < maxPendingWaits {
			// The header may have moved by this process's own audit commit, whose writer is
			// about to carry the cache over (ownCommit): a moment's wait for it is cheaper than
			// starting empty and reading the database. Waiting decides nothing; it only delays.
			runtime.Gosched()
			waits++
			if h, ok = c.wal.header(); !ok {
				return nil
			}
			continue
		}
		next := &cacheGen{hdr: h, cacheEntries: &cacheEntries{}}
		if g != nil {
			next.prevHdr, next.prev = g.hdr, g.cacheEntries
		}
		c.gen.CompareAndSwap(g, next)
	}
}

// put files v under key in g, unless the bound is reached: then the generation starts over
// empty (if it is still the current one), and v waits for the next request to be filed.
func (c *readCache) put(g *cacheGen, key, v any) {
	if g.n.Add(weightOf(v)) > c.limit {
		c.gen.CompareAndSwap(g, &cacheGen{hdr: g.hdr, cacheEntries: &cacheEntries{}})
		return
	}
	g.m.Store(key, v)
}

// maxPendingWaits bounds how often a lookup yields to a pending audit commit.
const maxPendingWaits = 16

// mark reads the header inside a write transaction, for ownCommit, which must follow whenever
// ok is true; ok is false without a cache.
func (c *readCache) mark() (h walHeader, ok bool) {
	if c == nil {
		return h, false
	}
	if h, ok = c.wal.header(); ok {
		c.pending.Add(1)
	}
	return h, ok
}

// ownCommit tells the cache that a commit by this process changed nothing it caches (an audit
// event): before is the header marked inside that write transaction, when no other connection
// could commit. If the counter has moved by exactly one since, the only commit in between was
// that one, and the present generation carries on under the new header instead of starting over:
// otherwise every decrypt would empty the cache. Checkpoints rewrite the header too but not the
// counter; they change no data.
//
// A request may have read the new header first and started an empty generation for it: the
// entries of the one it replaced are then taken back.
//
// committed is false when the transaction failed: nothing changes but the pending count.
func (c *readCache) ownCommit(before walHeader, committed bool) {
	defer c.pending.Add(-1)
	if !committed {
		return
	}
	after, ok := c.wal.header()
	if !ok || after.iChange() != before.iChange()+1 {
		return
	}
	switch g := c.gen.Load(); {
	case g == nil:
	case g.hdr == before:
		c.gen.CompareAndSwap(g, &cacheGen{hdr: after, cacheEntries: g.cacheEntries})
	case g.hdr == after && g.prev != nil && g.prevHdr == before:
		c.gen.CompareAndSwap(g, &cacheGen{hdr: after, cacheEntries: g.prev})
	}
}

// cached answers key from the cache when it can, and from load otherwise, keeping what load
// returns unless it failed. Cached values are shared between requests: callers must not modify
// them (slices included).
func cached[T any](c *readCache, key any, load func() (T, error)) (T, error) {
	if c == nil {
		return load()
	}
	g := c.current()
	if g == nil {
		return load()
	}
	if v, ok := g.m.Load(key); ok {
		return v.(T), nil
	}
	v, err := load()
	if err == nil {
		c.put(g, key, v)
	}
	return v, err
}
