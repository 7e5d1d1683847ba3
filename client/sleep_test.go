package client

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := sleep(context.Background(), time.Second); err != nil || time.Since(start) != time.Second {
			t.Fatalf("sleep: %v after %v", err, time.Since(start))
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel)
		start = time.Now()
		if err := sleep(ctx, time.Second); !errors.Is(err, context.Canceled) || time.Since(start) != 300*time.Millisecond {
			t.Fatalf("canceled sleep: %v after %v", err, time.Since(start))
		}
	})
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"3":    3 * time.Second,
		" 0 ":  0,
		"":     time.Second,
		"soon": time.Second,
		"-1":   time.Second,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Hour).Format(http.TimeFormat):       0,
		"99999999": 24 * time.Hour,
	} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("Retry-After %q: %v, want %v", v, got, want)
		}
	}
}
