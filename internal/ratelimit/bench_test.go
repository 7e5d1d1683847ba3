package ratelimit

import (
	"strconv"
	"testing"
)

// BenchmarkAllow is one request's check: a token taken from one of a thousand credentials' buckets.
func BenchmarkAllow(b *testing.B) {
	l := New(50, 100, 0, nil)
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "credential-" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		l.Allow(keys[i%len(keys)])
	}
}
