package app

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Retention is how long the audit trail keeps its events before `audit prune` may remove them:
// a number of months, of days, or a Go duration. PCI DSS v4.0 10.5.1 asks for 12 months of audit
// history (the default), 3 of them immediately available: a shorter policy is refused, since
// what is pruned is only in its archive, which is not immediately available.
type Retention struct {
	months, days int
	d            time.Duration
	text         string
}

// defaultRetention is PCI DSS 10.5.1's twelve months.
var defaultRetention = Retention{months: 12, text: "12months"}

// errShortRetention is a policy under PCI DSS's three months immediately available.
var errShortRetention = errors.New("shorter than 3 months (90 days): PCI DSS 10.5.1 asks for 3 months of audit history immediately available, and pruned events are only in their archive")

// ParseRetention reads BACKOFFICE_AUDIT_RETENTION: "" (12 months), "<n>months", "<n>d" (days),
// or a Go duration ("2160h"); at least 3 months, 90 days or 2160h.
func ParseRetention(v string) (Retention, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return defaultRetention, nil
	}
	r := Retention{text: v}
	number := func(s string) (int, bool) {
		n, err := strconv.Atoi(s)
		return n, err == nil && n > 0 && n < 10000
	}
	var ok bool
	switch {
	case strings.HasSuffix(v, "months"):
		r.months, ok = number(strings.TrimSuffix(v, "months"))
		ok = ok && r.months >= 3
	case strings.HasSuffix(v, "d"):
		r.days, ok = number(strings.TrimSuffix(v, "d"))
		ok = ok && r.days >= 90
	default:
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return r, fmt.Errorf("%q: want <n>months, <n>d (days) or a Go duration such as 8760h", v)
		}
		r.d, ok = d, d >= 90*24*time.Hour
	}
	if !ok {
		if r.months == 0 && r.days == 0 && r.d == 0 {
			return r, fmt.Errorf("%q: want <n>months, <n>d (days) or a Go duration such as 8760h", v)
		}
		return r, fmt.Errorf("%q is %w", v, errShortRetention)
	}
	return r, nil
}

// Cutoff is the time before which an event may be pruned at now.
func (r Retention) Cutoff(now time.Time) time.Time {
	if r.text == "" {
		r = defaultRetention
	}
	return now.AddDate(0, -r.months, -r.days).Add(-r.d)
}

func (r Retention) String() string {
	if r.text == "" {
		return defaultRetention.text
	}
	return r.text
}
