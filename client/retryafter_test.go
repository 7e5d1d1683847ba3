package client

import (
	"net/http"
	"testing"
	"time"
)

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
