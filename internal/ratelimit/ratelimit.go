// Package ratelimit keys golang.org/x/time/rate's token buckets: each key (a credential's hash, a
// client address) has a bucket of Burst tokens refilled at Rate tokens per second. Memory is
// bounded: a bucket that has refilled to full is the same as no bucket, so idle buckets are
// dropped, and the number of keys is capped.
package ratelimit

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter is safe for concurrent use. The zero value is not usable; call New.
type Limiter struct {
	rate    float64 // tokens per second
	burst   float64
	maxKeys int
	now     func() time.Time

	mu        sync.Mutex
	buckets   map[string]*rate.Limiter
	lastSweep time.Time
}

// Decision is the state of a key's bucket after a call: whether the request may go on, the
// bucket's size, the whole tokens left, when refused how long until a token is back, and how long
// until the bucket is full again if nothing is spent.
type Decision struct {
	Allowed    bool
	Limit      int
	Remaining  int
	RetryAfter time.Duration
	Full       time.Duration
}

// Policy is the bucket stated as a quota over a whole-second window (the form of the IETF
// RateLimit-Policy field): Quota requests at once, then Quota again every Window seconds, are
// never refused, and Quota/Window never exceeds the rate. It is the burst over the time the
// bucket takes to fill, when that is whole seconds (rate 50/s, burst 100: 100 per 2 s).
type Policy struct {
	Quota  int
	Window int // seconds, at least 1
}

// DefaultMaxKeys bounds the buckets one Limiter holds.
const DefaultMaxKeys = 100_000

// sweepEvery is how often idle (full) buckets are dropped.
const sweepEvery = time.Minute

// New returns a Limiter of burst tokens refilled at perSecond tokens a second, holding at most maxKeys
// buckets (DefaultMaxKeys when maxKeys <= 0). now is the clock; nil means time.Now.
func New(perSecond float64, burst int, maxKeys int, now func() time.Time) *Limiter {
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	if now == nil {
		now = time.Now
	}
	return &Limiter{rate: perSecond, burst: float64(max(burst, 1)), maxKeys: maxKeys, now: now,
		buckets: map[string]*rate.Limiter{}}
}

// Policy is the quota and window that describe this limiter truthfully (see Policy).
func (l *Limiter) Policy() Policy {
	if l.rate <= 0 {
		return Policy{Quota: int(l.burst), Window: math.MaxInt32} // never refills
	}
	// The window is the time to fill the bucket, rounded up to whole seconds; the quota is what
	// the bucket holds and what refills in that window, whichever is less.
	// (The epsilon keeps a rate like 10/60 per second from rounding 120 s up to 121.)
	const eps = 1e-9
	window := max(1, math.Ceil(l.burst/l.rate-eps))
	quota := math.Min(l.burst, math.Floor(l.rate*window+eps))
	return Policy{Quota: int(quota), Window: int(window)}
}

// Allow takes a token from key's bucket when one is there (making the bucket on first use).
func (l *Limiter) Allow(key string) Decision { return l.take(key, true) }

// Check tells whether key's bucket has a token, without taking one or making a bucket.
func (l *Limiter) Check(key string) Decision { return l.take(key, false) }

// size is how many buckets are held.
func (l *Limiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

func (l *Limiter) take(key string, spend bool) Decision {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) >= sweepEvery {
		l.sweep(now)
	}
	b := l.buckets[key]
	tokens := l.burst
	if b != nil {
		tokens = b.TokensAt(now)
	}
	d := Decision{Limit: int(l.burst), Allowed: tokens >= 1}
	if spend && d.Allowed {
		if b == nil {
			b = l.add(key, now)
		}
		b.AllowN(now, 1)
		tokens--
	}
	d.Remaining = int(math.Floor(tokens))
	if !d.Allowed {
		d.RetryAfter = l.wait(tokens)
	}
	d.Full = l.fill(tokens)
	return d
}

// add makes key's bucket, full, making room for it first when the cap is reached.
func (l *Limiter) add(key string, now time.Time) *rate.Limiter {
	if len(l.buckets) >= l.maxKeys {
		l.makeRoom(now)
	}
	b := rate.NewLimiter(rate.Limit(l.rate), int(l.burst))
	l.buckets[key] = b
	return b
}

// wait is how long until the bucket holds one whole token.
func (l *Limiter) wait(tokens float64) time.Duration {
	if l.rate <= 0 {
		return 24 * time.Hour // never refills: say "much later"
	}
	return time.Duration((1 - tokens) / l.rate * float64(time.Second))
}

// fill is how long until the bucket holds its whole burst again.
func (l *Limiter) fill(tokens float64) time.Duration {
	if tokens >= l.burst {
		return 0
	}
	if l.rate <= 0 {
		return 24 * time.Hour
	}
	return time.Duration((l.burst - tokens) / l.rate * float64(time.Second))
}

// sweep drops every bucket that has refilled to full: it is the same as none.
func (l *Limiter) sweep(now time.Time) {
	l.lastSweep = now
	for k, b := range l.buckets {
		if b.TokensAt(now) >= l.burst {
			delete(l.buckets, k)
		}
	}
}

// makeRoom frees space when the cap is reached: idle buckets first, then arbitrary ones (map
// order is random, so no caller can choose which bucket is dropped).
func (l *Limiter) makeRoom(now time.Time) {
	l.sweep(now)
	for k := range l.buckets {
		if len(l.buckets) < l.maxKeys {
			return
		}
		delete(l.buckets, k)
	}
}
