package store

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"backoffice/internal/domain"
)

// fakeWAL is a WAL-index header in ordinary memory, for driving the cache by hand.
func fakeWAL(t *testing.T) (*walIndex, func(iChange, salt uint32)) {
	t.Helper()
	w := &walIndex{mem: make([]byte, 2*walHeaderSize)}
	set := func(iChange, salt uint32) {
		for copyAt := 0; copyAt < 2*walHeaderSize; copyAt += walHeaderSize {
			h := w.mem[copyAt : copyAt+walHeaderSize]
			binary.NativeEndian.PutUint32(h[0:], walIndexVersion)
			binary.NativeEndian.PutUint32(h[8:], iChange)
			h[12] = 1 // isInit
			binary.NativeEndian.PutUint32(h[32:], salt)
		}
	}
	set(1, 1)
	return w, set
}

func cachedValue(c *readCache, key string) (any, bool) {
	g := c.current()
	if g == nil {
		return nil, false
	}
	return g.m.Load(key)
}

func fill(t *testing.T, c *readCache, key string) {
	t.Helper()
	if _, err := cached(c, key, func() (string, error) { return "v", nil }); err != nil {
		t.Fatal(err)
	}
}

func TestCacheAnswersUntilTheHeaderMoves(t *testing.T) {
	w, set := fakeWAL(t)
	c := newReadCache(w, 10)
	fill(t, c, "k")
	loads := 0
	v, _ := cached(c, "k", func() (string, error) { loads++; return "fresh", nil })
	if v != "v" || loads != 0 {
		t.Fatalf("second read: %q after %d loads; want the cached value, no load", v, loads)
	}
	set(2, 1)
	if _, ok := cachedValue(c, "k"); ok {
		t.Fatal("an entry survived a commit")
	}
	// A header caught half-way through a commit (the two copies differ) is not trusted.
	binary.NativeEndian.PutUint32(w.mem[8:], 3)
	if g := c.current(); g != nil {
		t.Fatal("a torn header was taken as a state of the database")
	}
	if _, err := cached(c, "k", func() (string, error) { loads++; return "x", nil }); err != nil || loads != 1 {
		t.Fatalf("read under a torn header: %d loads, %v; want it loaded", loads, err)
	}
}

func TestCacheOwnCommit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		after     uint32 // iChange after the audit commit (before it: 1)
		marked    uint32 // iChange the audit transaction saw (normally 1)
		wantKept  bool
		saltAfter uint32
	}{
		{"only the audit commit", 2, 1, true, 1},
		{"a checkpoint too", 2, 1, true, 7},
		{"another commit too", 3, 1, false, 1},
		{"a commit before the audit", 3, 2, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, set := fakeWAL(t)
			c := newReadCache(w, 10)
			fill(t, c, "k")
			set(tc.marked, 1)
			mark, ok := c.mark()
			if !ok {
				t.Fatal("no mark")
			}
			set(tc.after, tc.saltAfter)
			c.ownCommit(mark, true)
			if _, kept := cachedValue(c, "k"); kept != tc.wantKept {
				t.Fatalf("entry kept: %v, want %v", kept, tc.wantKept)
			}
		})
	}
}

// A request that reads the header between the audit commit and ownCommit starts an empty
// generation; ownCommit takes the entries back all the same.
func TestCacheOwnCommitAfterARequestSawIt(t *testing.T) {
	w, set := fakeWAL(t)
	c := newReadCache(w, 10)
	fill(t, c, "k")
	mark, _ := c.mark()
	set(2, 1)
	if _, ok := cachedValue(c, "k"); ok {
		t.Fatal("entry visible under a header it was not filed under")
	}
	c.ownCommit(mark, true)
	if _, ok := cachedValue(c, "k"); !ok {
		t.Fatal("the audit commit emptied the cache")
	}
	// Not when another commit came in between.
	mark, _ = c.mark()
	set(4, 1)
	_ = c.current()
	c.ownCommit(mark, true)
	if _, ok := cachedValue(c, "k"); ok {
		t.Fatal("entry kept across another connection's commit")
	}
}

func TestCacheBound(t *testing.T) {
	w, _ := fakeWAL(t)
	c := newReadCache(w, 2)
	fill(t, c, "a")
	fill(t, c, "b")
	fill(t, c, "c") // over the bound: the generation starts over
	for _, k := range []string{"a", "b", "c"} {
		if _, ok := cachedValue(c, k); ok {
			t.Errorf("%s still cached past the bound", k)
		}
	}
	fill(t, c, "c")
	if _, ok := cachedValue(c, "c"); !ok {
		t.Error("nothing cached after starting over")
	}
}

// A SAM page weighs by its logs: the bound is on what the cache holds, not on its entry count.
func TestCacheWeighsPages(t *testing.T) {
	w, _ := fakeWAL(t)
	c := newReadCache(w, 30)
	page := samPage{logs: make([]domain.SAMActionLog, 20)}
	for _, k := range []string{"p1", "p2"} { // 21 each: the second is over the bound
		if _, err := cached(c, k, func() (samPage, error) { return page, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := cachedValue(c, "p1"); ok {
		t.Error("two pages of 20 logs held under a bound of 30")
	}
}

func TestCacheKeepsNoFailure(t *testing.T) {
	w, _ := fakeWAL(t)
	c := newReadCache(w, 10)
	_, _ = cached(c, "k", func() (string, error) { return "", errNotFound })
	if _, ok := cachedValue(c, "k"); ok {
		t.Error("a failed load was cached")
	}
}

// On a real database: a read is cached, a decrypt's audit event keeps it, any other commit
// drops it.
func TestCacheOnSQLite(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, "sqlite:"+t.TempDir()+"/cache.db")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if st.cache == nil {
		t.Fatal("SQLite store without a read cache")
	}
	if _, err := st.q().exec(ctx, `INSERT INTO partners (id, name) VALUES ('00000000-0000-4000-8000-000000000001', 'p')`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.q().exec(ctx, `INSERT INTO leads (id, partner_id, business_name) VALUES ('00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000001', 'l')`); err != nil {
		t.Fatal(err)
	}
	lead := domain.ID("00000000-0000-4000-8000-000000000002")
	isCached := func() bool {
		g := st.cache.current()
		if g == nil {
			return false
		}
		_, ok := g.m.Load(acceptanceKey(lead))
		return ok
	}
	if _, err := st.ServiceAcceptance(ctx, domain.Scope{}, lead); err != nil {
		t.Fatal(err)
	}
	if !isCached() {
		t.Fatal("a service acceptance was not cached")
	}
	err = st.RecordAudit(ctx, domain.AuditEvent{At: time.Now(), ActorUserID: domain.SystemActorID, Action: "principal.decrypt", TargetID: "x", Outcome: domain.OutcomeGranted})
	if err != nil {
		t.Fatal(err)
	}
	if !isCached() {
		t.Error("an audit event emptied the cache")
	}
	if _, err := st.q().exec(ctx, `UPDATE leads SET business_name = 'm'`); err != nil {
		t.Fatal(err)
	}
	if isCached() {
		t.Error("an entry survived a change to the data")
	}
}
