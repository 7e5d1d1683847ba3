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
		if got := l.Allow("k"); got.Allowed != want.Allowed || got.Limit != want.Limit || got.Remaining != want.Remaining {
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
	if l.size() != 0 {
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
	if l.size() != 100 {
		t.Fatalf("len %d", l.size())
	}
	c.add(2 * sweepEvery) // every bucket is full again
	l.Allow("new")
	if l.size() != 1 {
		t.Fatalf("after the sweep: len %d, want 1", l.size())
	}
}

func TestKeysAreCapped(t *testing.T) {
	c := newClock()
	l := New(0.001, 1, 10, c.now)
	for i := range 1000 {
		l.Allow(fmt.Sprint("k", i))
		if l.size() > 10 {
			t.Fatalf("len %d over the cap", l.size())
		}
	}
	// The newest key always gets its bucket.
	if got := l.Check("k999"); got.Allowed {
		t.Fatalf("the last key's bucket was dropped: %+v", got)
	}
}

// The policy is true of the bucket: Quota requests at once, then again every Window seconds, are
// never refused, and the policy's average never exceeds the rate.
func TestPolicy(t *testing.T) {
	cases := []struct {
		rate  float64
		burst int
		want  Policy
	}{
		{50, 100, Policy{Quota: 100, Window: 2}}, // the defaults
		{30, 100, Policy{Quota: 100, Window: 4}}, // fills in 3.33 s: the window rounds up
		{50, 10, Policy{Quota: 10, Window: 1}},   // fills in 0.2 s: no sub-second windows
		{10.0 / 60, 20, Policy{Quota: 20, Window: 120}},
		{0.5, 1, Policy{Quota: 1, Window: 2}},
		{1, 1, Policy{Quota: 1, Window: 1}},
	}
	for _, c := range cases {
		got := New(c.rate, c.burst, 0, nil).Policy()
		if got != c.want {
			t.Errorf("rate %v burst %d: %+v, want %+v", c.rate, c.burst, got, c.want)
		}
		// Follow the policy for a while on a hand-moved clock: nothing is refused.
		clk := newClock()
		l := New(c.rate, c.burst, 0, clk.now)
		for round := range 5 {
			for i := range got.Quota {
				if d := l.Allow("k"); !d.Allowed {
					t.Fatalf("rate %v burst %d: round %d request %d refused", c.rate, c.burst, round, i+1)
				}
			}
			clk.add(time.Duration(got.Window) * time.Second)
		}
		if float64(got.Quota)/float64(got.Window) > c.rate+1e-9 {
			t.Errorf("rate %v burst %d: policy average %d/%d exceeds the rate", c.rate, c.burst, got.Quota, got.Window)
		}
	}
}

// Full is how long until the bucket is whole again: what the RateLimit field's reset says.
func TestFull(t *testing.T) {
	c := newClock()
	l := New(50, 100, 0, c.now)
	if d := l.Check("k"); d.Full != 0 {
		t.Fatalf("fresh bucket: Full %v", d.Full)
	}
	var d Decision
	for range 43 {
		d = l.Allow("k")
	}
	if d.Remaining != 57 || d.Full != 860*time.Millisecond {
		t.Fatalf("after 43 requests: %+v, want 57 left and full in 860ms", d)
	}
	c.add(860 * time.Millisecond)
	if d := l.Check("k"); d.Remaining != 100 || d.Full != 0 {
		t.Fatalf("860ms later: %+v", d)
	}
}
