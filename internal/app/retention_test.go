package app

import (
	"errors"
	"testing"
	"time"
)

// The retention policy's forms, its default, and its floor of 3 months (PCI DSS 10.5.1's
// immediately available history).
func TestParseRetention(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in     string
		cutoff time.Time
		err    error
	}{
		{"", time.Date(2025, 12, 2, 12, 0, 0, 0, time.UTC), nil},
		{"12months", time.Date(2025, 12, 2, 12, 0, 0, 0, time.UTC), nil},
		{"3months", time.Date(2026, 9, 2, 12, 0, 0, 0, time.UTC), nil},
		{"90d", now.AddDate(0, 0, -90), nil},
		{"400d", now.AddDate(0, 0, -400), nil},
		{"2160h", now.Add(-2160 * time.Hour), nil},
		{"2months", time.Time{}, errShortRetention},
		{"89d", time.Time{}, errShortRetention},
		{"2159h", time.Time{}, errShortRetention},
		{"0d", time.Time{}, errors.New("want")},
		{"a year", time.Time{}, errors.New("want")},
		{"-400d", time.Time{}, errors.New("want")},
	} {
		r, err := ParseRetention(c.in)
		switch {
		case c.err == nil && err != nil:
			t.Errorf("%q: %v", c.in, err)
		case c.err == errShortRetention && !errors.Is(err, errShortRetention):
			t.Errorf("%q: %v, want it refused as too short", c.in, err)
		case c.err != nil && err == nil:
			t.Errorf("%q: accepted (%s), want it refused", c.in, r)
		case c.err == nil && !r.Cutoff(now).Equal(c.cutoff):
			t.Errorf("%q: cutoff %s, want %s", c.in, r.Cutoff(now), c.cutoff)
		}
	}
}
