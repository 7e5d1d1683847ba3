package auditlog

import (
	"fmt"
	"strings"
)

// looseRow decodes the values of a row scanned into `any`, whatever its columns hold: someone
// with database access can write a value of another type (SQLite keeps text in an integer
// column) or NULL where the service never does. Each column that does not hold a value of its
// kind is noted, and the row's readers (the chain's walk, the genesis) report it as the break it
// is instead of failing to read. One set of rules, so that both read a column the same way.
type looseRow struct {
	bad []string
}

// text is a text column's value, and whether it holds one (false: NULL). A NULL where none may
// be (nullable false), or a value of another kind, is noted.
func (l *looseRow) text(v any, name string, nullable bool) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []byte:
		return string(x), true
	case nil:
		if !nullable {
			l.bad = append(l.bad, name+" is NULL")
		}
		return "", false
	}
	l.bad = append(l.bad, fmt.Sprintf("%s holds %s, not text", name, describe(v)))
	return "", true
}

// number is a whole-number column's value, and whether it holds one (false: NULL, which the
// caller judges). A value of another kind is noted.
func (l *looseRow) number(v any, name string) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case nil:
		return 0, false
	}
	l.bad = append(l.bad, fmt.Sprintf("%s holds %s, not a whole number", name, describe(v)))
	return 0, true
}

// bytes is a blob column's value (text written into it counts as its bytes), nil for NULL. A
// value of another kind is noted.
func (l *looseRow) bytes(v any, name string) []byte {
	switch x := v.(type) {
	case []byte:
		return x
	case string:
		return []byte(x)
	case nil:
		return nil
	}
	l.bad = append(l.bad, fmt.Sprintf("%s holds %s, not bytes", name, describe(v)))
	return nil
}

// note adds a fault of the row that its readers find beyond a column's kind.
func (l *looseRow) note(fault string) { l.bad = append(l.bad, fault) }

// faults names every column noted, "" when none was.
func (l *looseRow) faults() string { return strings.Join(l.bad, ", ") }

// describe names a value read from the database for a report, without quoting long text whole.
func describe(v any) string {
	if s, ok := v.(string); ok {
		if len(s) > 20 {
			s = s[:20] + "…"
		}
		return fmt.Sprintf("the text %q", s)
	}
	return fmt.Sprintf("a %T", v)
}
