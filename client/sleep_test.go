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
	type answer struct {
		wait time.Duration
		ok   bool
	}
	for v, want := range map[string]answer{
		"3":    {3 * time.Second, true},
		" 0 ":  {0, true},
		"":     {0, false},
		"soon": {0, false},
		"-1":   {0, false},
		now.Add(90 * time.Second).Format(http.TimeFormat): {90 * time.Second, true},
		now.Add(-time.Hour).Format(http.TimeFormat):       {0, true},
		now.AddDate(1, 0, 0).Format(http.TimeFormat):      {24 * time.Hour, true},
		"99999999": {24 * time.Hour, true},
	} {
		if wait, ok := parseRetryAfter(v, now); wait != want.wait || ok != want.ok {
			t.Errorf("Retry-After %q: %v %v, want %v %v", v, wait, ok, want.wait, want.ok)
		}
	}
}
