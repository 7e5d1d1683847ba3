package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"backoffice/internal/sqltx"
)

// cacheEntries bounds the read cache: when full, one entry, any, makes room for the next. The hot
// reads are few (the callers' keys, the leads and pages they ask for), so a bound this size is met
// only by callers sweeping many records (decrypts of many principals, say), and the hot entries
// stay through a sweep: each has one chance in cacheEntries to be the one dropped.
const cacheEntries = 4096

// versioner reads a number that moves whenever a commit changed what the cached reads read
// (generation).
type versioner interface {
	Version(ctx context.Context) (int64, error)
}

// generation is the read cache's check: cache_generation.n, which the triggers of migration
// 0010 (SQLite) and 0011 (PostgreSQL) move in the same transaction as any change to a table or
// column a cached read reads, whoever makes it (in an import, once, by its commit:
// Engine.BeginImport, PostgreSQL's migration 0022). It is an ordinary read on the pool, made on the
// caller's goroutine: outside any transaction (autocommit), so on PostgreSQL it sees every commit
// made before it began, whatever a snapshot elsewhere holds. Audit commits touch no cached table
// and leave it as it was.
type generation struct {
	pool   *sqltx.DB
	engine Engine
}

// Version fails as unavailable, before reading, when the engine says a read would come from a
// database nobody writes any more (SQLite: the file opened was removed or replaced, and its n
// would never move again): the read cache then refuses the read (see cached). On an engine of
// prompt reads it reads whether or not the request is still waiting (Engine.PromptReads).
func (g generation) Version(ctx context.Context) (int64, error) {
	if err := g.pool.BeforeWrite(); err != nil {
		return 0, err
	}
	if g.engine.PromptReads() {
		ctx = context.WithoutCancel(ctx)
	}
	var n int64
	err := g.pool.QueryRow(ctx, generationQuery).Scan(&n)
	return n, err
}

// generationQuery reads the read cache's generation (cache_generation.n).
const generationQuery = `SELECT n FROM cache_generation WHERE id = 1`

// readCache keeps the answers of the per-request reads (credentials, service acceptance, sealed
// SSNs, SAM log pages) for as long as what they read has not changed. Every entry was read after
// the version it is filed under was; a lookup reads the version afresh and empties the cache when
// it moved. So a commit by anyone that changes a cached table (a revocation, an import, a rewrap;
// in this process, another, or another replica) is seen by the next read that starts after it, as
// without a cache. Entries hold what the database said, never a decision: scope and expiry are
// checked on every call.
type readCache struct {
	changes versioner
	mu      sync.Mutex
	version int64
	known   bool // version was read
	entries map[cacheKey]any
}

// cacheKey names one read: which read, and its arguments.
type cacheKey struct {
	read       cachedRead
	a, b       string
	page, size int64
}

func newReadCache(changes versioner) *readCache {
	return &readCache{changes: changes, entries: make(map[cacheKey]any)}
}

// get returns the entry for key if the database has not changed since it was read, and the
// version to file a fresh answer under; ok is false when the version could not be read (then
// nothing is to be filed). err is a check that found the database unavailable (ErrUnavailable:
// its file removed or replaced, say): then nothing may be read at all.
func (c *readCache) get(ctx context.Context, key cacheKey) (v any, hit bool, version int64, ok bool, err error) {
	version, err = c.changes.Version(ctx)
	if errors.Is(err, ErrUnavailable) {
		return nil, false, 0, false, err
	}
	if err != nil {
		return nil, false, 0, false, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if version != c.version || !c.known {
		clear(c.entries)
		c.version, c.known = version, true
	}
	v, hit = c.entries[key]
	return v, hit, version, true, nil
}

// put files v, read after version was, unless the database has changed since.
func (c *readCache) put(key cacheKey, v any, version int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if version != c.version {
		return
	}
	if len(c.entries) >= cacheEntries {
		dropOne(c.entries)
	}
	c.entries[key] = v
}

// dropOne removes an entry of m, whichever a range over it meets first: the runtime starts each
// range at a random place, so each entry is as likely as any other to go.
func dropOne[K comparable, V any](m map[K]V) {
	for k := range m {
		delete(m, k)
		return
	}
}

// cached answers from c when it can, otherwise with load, filing load's answer; a nil c (turned
// off for a benchmark) always loads; a check that finds the database unavailable fails the read,
// which would be answered from a file no longer in use. Errors are never filed. copyOf gives each
// caller its own copy of what it may modify.
func cached[T any](ctx context.Context, c *readCache, key cacheKey, load func() (T, error), copyOf func(T) T) (T, error) {
	if c == nil {
		return load()
	}
	v, hit, version, ok, err := c.get(ctx, key)
	if err != nil {
		var zero T
		return zero, err
	}
	if hit {
		return copyOf(v.(T)), nil
	}
	fresh, err := load()
	if err == nil && ok {
		c.put(key, fresh, version)
		fresh = copyOf(fresh)
	}
	return fresh, err
}

// readCached is cached for one of the store's reads (c and q are the store's cache and pool): read
// is given the pool as a cachedReader, which runs only the statements the read lists.
func readCached[T any](ctx context.Context, c *readCache, q *sqltx.DB, key cacheKey, read func(r cachedReader) (T, error), copyOf func(T) T) (T, error) {
	return cached(ctx, c, key, func() (T, error) { return read(cachedReader{q: q, read: key.read}) }, copyOf)
}

// cachedReader is the pool as one cached read's load reads it: it runs only the statements the
// read lists (cachedRead.queries), which are the ones TestTriggersCoverWhatCachedReadsRead proves
// watched by the generation's triggers. A load that ran another statement would read what no
// trigger may watch, and its answer could be served after that changed: it fails instead.
type cachedReader struct {
	q    *sqltx.DB
	read cachedRead
}

// errUnlisted is a statement a cached read's load ran that the read does not list.
var errUnlisted = errors.New("a cached read runs a statement it does not list")

func (r cachedReader) listed(query string) error {
	if slices.Contains(r.read.queries(), query) {
		return nil
	}
	return fmt.Errorf("store: %w (read %d): %s", errUnlisted, r.read, query)
}

// Query is sqltx.DB.Query, of a listed statement.
func (r cachedReader) Query(ctx context.Context, query string, args ...any) (*sqltx.Rows, error) {
	if err := r.listed(query); err != nil {
		return nil, err
	}
	return r.q.Query(ctx, query, args...)
}

// QueryRow is sqltx.DB.QueryRow, of a listed statement.
func (r cachedReader) QueryRow(ctx context.Context, query string, args ...any) sqltx.Row {
	return sqltx.NewRow(ctx, r, query, args)
}

// ReadRow is sqltx.DB.ReadRow, of a listed statement.
func (r cachedReader) ReadRow(ctx context.Context, query string, args, dest []any) error {
	if err := r.listed(query); err != nil {
		return err
	}
	return r.q.ReadRow(ctx, query, args, dest)
}
