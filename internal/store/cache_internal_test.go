package store

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"errors"
	"testing"
	"time"

	"backoffice/internal/domain"
)

// fakeVersion is a cache generation a test moves by hand.
type fakeVersion struct {
	v     int64
	err   error
	reads int
}

func (f *fakeVersion) Version(context.Context) (int64, error) { f.reads++; return f.v, f.err }

func TestReadCacheIsBounded(t *testing.T) {
	c := newReadCache(&fakeVersion{v: 1})
	for i := range cacheEntries + 10 {
		key := cacheKey{read: samPageRead, page: int64(i)}
		if _, err := cached(t.Context(), c, key, func() (int, error) { return i, nil }, func(v int) int { return v }); err != nil {
			t.Fatal(err)
		}
		if len(c.entries) > cacheEntries {
			t.Fatalf("%d entries after %d reads; the bound is %d", len(c.entries), i+1, cacheEntries)
		}
	}
}

// A full cache makes room for the next answer by dropping one entry, not all: a caller sweeping
// many records keeps the other callers' entries (their credentials) cached. Which one goes is left
// to chance, so that no entry is always the one.
func TestFullReadCacheDropsOneEntry(t *testing.T) {
	dropped := map[int64]bool{}
	for range 20 {
		c := newReadCache(&fakeVersion{v: 1})
		for i := range cacheEntries + 1 {
			key := cacheKey{read: samPageRead, page: int64(i)}
			if _, err := cached(t.Context(), c, key, func() (int, error) { return i, nil }, func(v int) int { return v }); err != nil {
				t.Fatal(err)
			}
		}
		if len(c.entries) != cacheEntries {
			t.Fatalf("%d entries after %d answers; one should have made room, leaving %d", len(c.entries), cacheEntries+1, cacheEntries)
		}
		if _, ok := c.entries[cacheKey{read: samPageRead, page: cacheEntries}]; !ok {
			t.Fatal("the answer that found the cache full was not filed")
		}
		for i := range int64(cacheEntries) {
			if _, ok := c.entries[cacheKey{read: samPageRead, page: i}]; !ok {
				dropped[i] = true
			}
		}
	}
	if len(dropped) < 2 {
		t.Errorf("twenty full caches all dropped the same entry (%v): one entry is always the one to go", dropped)
	}
}

// An answer read under one version is not filed once another read has seen the database change:
// it may be older than the change.
func TestReadCacheDropsAnswersOfAnOlderVersion(t *testing.T) {
	ctx := t.Context()
	f := &fakeVersion{v: 1}
	c := newReadCache(f)
	key := cacheKey{read: acceptanceRead, a: "lead"}
	_, _, version, ok, _ := c.get(ctx, key)
	if !ok || version != 1 {
		t.Fatalf("get: version %d, ok %v", version, ok)
	}
	f.v = 2
	c.get(ctx, cacheKey{read: acceptanceRead, a: "other"})
	c.put(key, "read under version 1", version)
	if _, hit, _, _, _ := c.get(ctx, key); hit {
		t.Error("an answer read before a change was served after it")
	}
}

// Without a version nothing is served or filed: every read goes to the database.
func TestReadCacheWithoutAVersionReadsTheDatabase(t *testing.T) {
	c := newReadCache(&fakeVersion{err: errors.New("database gone")})
	loads := 0
	for range 3 {
		if _, err := cached(t.Context(), c, cacheKey{read: ssnRead}, func() (int, error) { loads++; return loads, nil }, func(v int) int { return v }); err != nil {
			t.Fatal(err)
		}
	}
	if loads != 3 || len(c.entries) != 0 {
		t.Errorf("%d loads, %d entries; want 3 loads and nothing filed", loads, len(c.entries))
	}
}

// Every cached read checks the version itself, before it answers: two reads of one request
// make two checks, so a change committed between them (a key revoked while the request runs) is
// seen by the second; a changed version loads again.
func TestEveryCachedReadChecksTheVersion(t *testing.T) {
	f := &fakeVersion{v: 1}
	c := newReadCache(f)
	loads := 0
	read := func(key cachedRead) {
		t.Helper()
		if _, err := cached(t.Context(), c, cacheKey{read: key}, func() (int, error) { loads++; return loads, nil }, func(v int) int { return v }); err != nil {
			t.Fatal(err)
		}
	}
	read(credentialRead)
	read(credentialRead)
	if f.reads != 2 || loads != 1 {
		t.Fatalf("two reads: %d checks, %d loads; want 2 and 1", f.reads, loads)
	}
	f.v = 2
	read(credentialRead)
	if f.reads != 3 || loads != 2 {
		t.Errorf("a read after a change: %d checks in all, %d loads; want 3 and 2 (the cached answer is stale)", f.reads, loads)
	}
}

// testSigner links the audit chain under a fixed key.
type testSigner struct{}

func (testSigner) ActiveKeyID() string { return "test" }
func (testSigner) ChainMAC(_ string, message []byte) ([]byte, error) {
	m := hmac.New(sha256.New, []byte("test chain key"))
	m.Write(message)
	return m.Sum(nil), nil
}
func (testSigner) SubjectTag(_, subject string) ([]byte, error) {
	m := hmac.New(sha256.New, []byte("test subject key"))
	m.Write([]byte(subject))
	return m.Sum(nil), nil
}

// Audit commits touch no table a cached read reads, so they leave the cache generation, and the
// cache, as they were: the events of decrypts do not empty it. A change to a cached table moves
// the generation; a change to another table does not.
func TestAuditCommitsKeepTheReadCache(t *testing.T) {
	ctx := context.Background()
	s, _ := openSQLite(t)
	gen := func() int64 {
		t.Helper()
		v, err := s.cache.changes.Version(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	key := cacheKey{read: acceptanceRead, a: "lead"}
	loads := 0
	read := func() {
		t.Helper()
		if _, err := cached(ctx, s.cache, key, func() (int, error) { loads++; return loads, nil }, func(v int) int { return v }); err != nil {
			t.Fatal(err)
		}
	}
	read()
	before := gen()
	for i := range 200 {
		if err := s.RecordAudit(ctx, domain.AuditEvent{At: time.Unix(int64(i), 0), ActorUserID: "u", Action: "principal.decrypt", TargetID: "p", Outcome: domain.OutcomeGranted}); err != nil {
			t.Fatal(err)
		}
	}
	read()
	if after := gen(); after != before || loads != 1 {
		t.Errorf("after 200 audit commits: generation %d → %d, %d loads; want it unmoved and the read answered from the cache", before, after, loads)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO partners (id, name) VALUES (?, ?)`, "00000000-0000-4000-8000-000000000001", "p"); err != nil { // no cached read reads partners
		t.Fatal(err)
	}
	if v := gen(); v != before {
		t.Errorf("a new partner moved the generation %d → %d; no cached read reads partners", before, v)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO users (id, partner_id, email, permissions) VALUES (?, ?, ?, ?)`, "00000000-0000-4000-8000-000000000002", "00000000-0000-4000-8000-000000000001", "e", ""); err != nil {
		t.Fatal(err)
	}
	if v := gen(); v == before {
		t.Errorf("after a new user the generation is %d, as before it: the cache would serve stale answers", v)
	}
	read()
	if loads != 2 {
		t.Errorf("%d loads after a change to a cached table; want the read to go to the database again", loads)
	}
}

// A cached read's load runs only the statements its read lists, the ones the coverage test proves
// watched by the generation's triggers (TestTriggersCoverWhatCachedReadsRead): a statement it does
// not list fails, whichever way it is run, and a listed one runs.
func TestCachedReadsRunOnlyTheirListedStatements(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, "sqlite:"+t.TempDir()+"/cached.db")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	const unlisted = `SELECT count(*) FROM users`
	for read := range cachedReads {
		r := cachedReader{q: s.pool, read: read}
		var n int64
		if err := r.QueryRow(ctx, unlisted).Scan(&n); !errors.Is(err, errUnlisted) {
			t.Errorf("cached read %d ran a statement it does not list (QueryRow)", read)
		}
		if rows, err := r.Query(ctx, unlisted); !errors.Is(err, errUnlisted) {
			if err == nil {
				rows.Close()
			}
			t.Errorf("cached read %d ran a statement it does not list (Query)", read)
		}
	}
	r := cachedReader{q: s.pool, read: ssnRead}
	var partner, keyID, sealed any
	if err := r.QueryRow(ctx, principalSSNQuery, "p", "l").Scan(&partner, &keyID, &sealed); !errors.Is(err, errNotFound) && !errors.Is(err, sql.ErrNoRows) {
		t.Errorf("the read's own statement: %v, want no rows", err)
	}
}
