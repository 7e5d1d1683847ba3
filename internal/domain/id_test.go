package domain

import (
	"strings"
	"testing"
)

func TestParseID(t *testing.T) {
	for _, c := range []struct {
		in   string
		want ID
		ok   bool
	}{
		{"3f1c2a9e-6b7d-4e2f-9a1b-0c2d3e4f5a6b", "3f1c2a9e-6b7d-4e2f-9a1b-0c2d3e4f5a6b", true},
		{"3F1C2A9E-6B7D-4E2F-9A1B-0C2D3E4F5A6B", "3f1c2a9e-6b7d-4e2f-9a1b-0c2d3e4f5a6b", true},
		{"00000000-0000-0000-0000-000000000000", nilID, true},
		{"FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", maxID, true},
		{"3f1c2a9e-6b7d-0e2f-9a1b-0c2d3e4f5a6b", "", false}, // version 0
		{"3f1c2a9e-6b7d-9e2f-9a1b-0c2d3e4f5a6b", "", false}, // version 9
		{"3f1c2a9e-6b7d-4e2f-ca1b-0c2d3e4f5a6b", "", false}, // variant c
		{"3f1c2a9e6b7d4e2f9a1b0c2d3e4f5a6b", "", false},
		{"{3f1c2a9e-6b7d-4e2f-9a1b-0c2d3e4f5a6b}", "", false},
		{"3f1c2a9e-6b7d-4e2f-9a1b-0c2d3e4f5a6g", "", false},
		{"", "", false},
	} {
		got, err := ParseID(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseID(%q) = %q, %v; want %q ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}

// FuzzParseID: no input panics; an accepted id is canonical (36 characters, lower case, parsing
// it again gives itself) and its upper-case spelling is the same id.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"3f1c2a9e-6b7d-4e2f-9a1b-0c2d3e4f5a6b", nilID, maxID, "", "x", strings.Repeat("-", 36),
		"3F1C2A9E-6B7D-4E2F-9A1B-0C2D3E4F5A6B", "3f1c2a9e-6b7d-4e2f-9a1b-0c2d3e4f5a6\u00e9", NewID().String()} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID(s)
		if err != nil {
			if id != "" {
				t.Fatalf("ParseID(%q) failed but returned %q", s, id)
			}
			return
		}
		if len(id) != 36 || string(id) != strings.ToLower(string(id)) || !strings.EqualFold(string(id), s) {
			t.Fatalf("ParseID(%q) = %q: not canonical", s, id)
		}
		if again, err := ParseID(string(id)); err != nil || again != id {
			t.Fatalf("ParseID(%q) = %q, %v: not stable", id, again, err)
		}
		if up, err := ParseID(strings.ToUpper(s)); err != nil || up != id {
			t.Fatalf("upper case of %q parses to %q, %v", s, up, err)
		}
	})
}

func TestNewIDParses(t *testing.T) {
	for range 100 {
		id := NewID()
		if got, err := ParseID(id.String()); err != nil || got != id {
			t.Fatalf("NewID %q does not parse: %v", id, err)
		}
	}
}
