package api

import (
	"testing"
	"time"
)

// Retry-After is whole seconds rounded up, never 0: a client told 0 would retry at once.
func TestRetryAfterSeconds(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Nanosecond: "1", 999 * time.Millisecond: "1", time.Second: "1",
		1001 * time.Millisecond: "2", 40 * time.Second: "40", -time.Second: "1",
	} {
		if got := retryAfterSeconds(d); got != want {
			t.Errorf("retryAfterSeconds(%v) = %s, want %s", d, got, want)
		}
	}
}
