package ratelimit

import (
	"fmt"
	"testing"
	"time"
)

// clock is a hand-moved clock: no test here waits.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) add(d time.Duration)     { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }
func decision(ok bool, rem int) Decision { return Decision{Allowed: ok, Limit: 3, Remaining: rem} }

func TestBucket(t *testing.T) {
	c := newClock()
	l := New(2, 3, 0, c.now) // 2 per second, burst 3
	for i, want := range []Decision{decision(true, 2), decision(true, 1), decision(true, 0)} {
		if got := l.Allow("k"); got != want {
			t.Fatalf("request %d: %+v, want %+v", i+1, got, want)
		}
	}
	got := l.Allow("k")
	if got.Allowed || got.Remaining != 0 || got.RetryAfter != 500*time.Millisecond {
		t.Fatalf("over the burst: %+v, want refused with RetryAfter 500ms", got)
	}
	c.add(500 * time.Millisecond)
	if got := l.Allow("k"); !got.Allowed || got.Remaining != 0 {
		t.Fatalf("after one refill: %+v", got)
	}
	// Other keys have their own buckets.
	if got := l.Allow("other"); !got.Allowed || got.Remaining != 2 {
		t.Fatalf("another key: %+v", got)
	}
	// A long pause refills to the burst, not beyond.
	c.add(time.Hour)
	if got := l.Allow("k"); got.Remaining != 2 {
		t.Fatalf("after a long pause: %+v", got)
	}
}

func TestCheckNeitherSpendsNorCreates(t *testing.T) {
	c := newClock()
	l := New(1, 1, 0, c.now)
	if got := l.Check("k"); !got.Allowed || got.Remaining != 1 {
		t.Fatalf("fresh key: %+v", got)
	}
	if l.Len() != 0 {
		t.Fatalf("Check made a bucket")
	}
	l.Allow("k")
	if got := l.Check("k"); got.Allowed || got.RetryAfter != time.Second {
		t.Fatalf("spent key: %+v", got)
	}
	if got := l.Check("k"); got.Allowed {
		t.Fatalf("Check spent a token: %+v", got)
	}
}

func TestIdleBucketsAreDropped(t *testing.T) {
	c := newClock()
	l := New(1, 5, 0, c.now)
	for i := range 100 {
		l.Allow(fmt.Sprint("k", i))
	}
	if l.Len() != 100 {
		t.Fatalf("len %d", l.Len())
	}
	c.add(2 * sweepEvery) // every bucket is full again
	l.Allow("new")
	if l.Len() != 1 {
		t.Fatalf("after the sweep: len %d, want 1", l.Len())
	}
}

func TestKeysAreCapped(t *testing.T) {
	c := newClock()
	l := New(0.001, 1, 10, c.now)
	for i := range 1000 {
		l.Allow(fmt.Sprint("k", i))
		if l.Len() > 10 {
			t.Fatalf("len %d over the cap", l.Len())
		}
	}
	// The newest key always gets its bucket.
	if got := l.Check("k999"); got.Allowed {
		t.Fatalf("the last key's bucket was dropped: %+v", got)
	}
}
