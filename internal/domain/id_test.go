package domain

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseID(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"123e4567-e89b-42d3-a456-426614174000", "123e4567-e89b-42d3-a456-426614174000", true},
		{"123E4567-E89B-42D3-A456-426614174000", "123e4567-e89b-42d3-a456-426614174000", true},
		{"00000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-000000000000", true},
		{"ffffffff-ffff-ffff-ffff-ffffffffffff", "ffffffff-ffff-ffff-ffff-ffffffffffff", true},
		{"FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", "ffffffff-ffff-ffff-ffff-ffffffffffff", true},
		{"123e4567-e89b-12d3-8456-426614174000", "123e4567-e89b-12d3-8456-426614174000", true}, // version 1, variant 8
		{"123e4567-e89b-82d3-b456-426614174000", "123e4567-e89b-82d3-b456-426614174000", true}, // version 8, variant b
		{"123e4567-e89b-42d3-9456-426614174000", "123e4567-e89b-42d3-9456-426614174000", true}, // variant 9
		{"123e4567-e89b-42d3-B456-426614174000", "123e4567-e89b-42d3-b456-426614174000", true}, // variant B
		{"123e4567-e89b-02d3-a456-426614174000", "", false},                                    // version 0
		{"123e4567-e89b-92d3-a456-426614174000", "", false},                                    // version 9
		{"123e4567-e89b-f2d3-a456-426614174000", "", false},                                    // version f
		{"123e4567-e89b-42d3-c456-426614174000", "", false},                                    // variant c
		{"123e4567-e89b-42d3-7456-426614174000", "", false},                                    // variant 7
		{"00000000-0000-0000-0000-00000000000f", "", false},                                    // not quite nil
		{"123e4567e89b42d3a456426614174000", "", false},
		{"123e4567-e89b-42d3-a456-42661417400", "", false},
		{"123e4567-e89b-42d3-a456-4266141740000", "", false},
		{"123e4567-e89b-42d3-a456_426614174000", "", false},
		{"g23e4567-e89b-42d3-a456-426614174000", "", false},
		{"", "", false},
		{" 123e4567-e89b-42d3-a456-42661417400", "", false},
	}
	for _, tt := range tests {
		got, err := ParseID(tt.in)
		if (err == nil) != tt.ok || string(got) != tt.want {
			t.Errorf("ParseID(%q) = %q, %v; want %q, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if canonical := tt.ok && tt.in == tt.want; IsCanonical(tt.in) != canonical {
			t.Errorf("IsCanonical(%q) = %v, want %v", tt.in, !canonical, canonical)
		}
	}
}

func TestNewIDParses(t *testing.T) {
	for range 100 {
		id := NewID()
		if got, err := ParseID(string(id)); err != nil || got != id {
			t.Fatalf("NewID() = %q does not parse: %v", id, err)
		}
	}
}

func TestNewTimeOrderedID(t *testing.T) {
	at := time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)
	prev := ID("")
	for i := range 100 {
		id := NewTimeOrderedID(at.Add(time.Duration(i) * time.Millisecond))
		if got, err := ParseID(string(id)); err != nil || got != id {
			t.Fatalf("NewTimeOrderedID() = %q does not parse: %v", id, err)
		}
		if id[14] != '7' || !strings.ContainsRune("89ab", rune(id[19])) {
			t.Fatalf("%q: want version 7, variant 10", id)
		}
		if ms := strings.ReplaceAll(string(id[:13]), "-", ""); ms != fmt.Sprintf("%012x", at.UnixMilli()+int64(i)) {
			t.Fatalf("%q: time bits %s, want %012x", id, ms, at.UnixMilli()+int64(i))
		}
		if id <= prev {
			t.Fatalf("%q made after %q sorts before it", id, prev)
		}
		prev = id
	}
}

func TestSSNRedactsItself(t *testing.T) {
	s := NewSSN("123-45-6789")
	for _, out := range []string{s.String(), s.GoString()} {
		if out != "[REDACTED]" {
			t.Errorf("got %q", out)
		}
	}
	if s.Reveal() != "123-45-6789" {
		t.Error("Reveal lost the value")
	}
}

// FuzzParseID: no input panics; an accepted id is canonical (36 characters, lower case, parsing
// it again gives itself) and its upper-case spelling is the same id; IsCanonical agrees.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"123e4567-e89b-42d3-a456-426614174000", "00000000-0000-0000-0000-000000000000", "", "x",
		"FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", strings.Repeat("-", 36), "123e4567-e89b-42d3-a456-42661417400\u00e9", NewID().String()} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID(s)
		if canonical := err == nil && string(id) == s; IsCanonical(s) != canonical {
			t.Fatalf("IsCanonical(%q) = %v; ParseID gives %q, %v", s, !canonical, id, err)
		}
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

func TestSSNRedactsInFormatting(t *testing.T) {
	s := NewSSN("123-45-6789")
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		if out := fmt.Sprintf(verb, s); out != "[REDACTED]" {
			t.Errorf("%s: %q", verb, out)
		}
	}
}

func TestIDBytes(t *testing.T) {
	id := ID("0123abcd-4567-4890-a1b2-c3d4e5f60718")
	u, ok := id.Bytes()
	want := [16]byte{0x01, 0x23, 0xab, 0xcd, 0x45, 0x67, 0x48, 0x90, 0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6, 0x07, 0x18}
	if !ok || u != want {
		t.Fatalf("Bytes() = %x, %v; want %x", u, ok, want)
	}
	if back := IDFromBytes(u); back != id {
		t.Errorf("IDFromBytes = %q, want %q", back, id)
	}
	if up, ok := ID(strings.ToUpper(string(id))).Bytes(); !ok || up != want {
		t.Errorf("upper case: %x, %v", up, ok)
	}
	for _, bad := range []ID{"", "0123abcd-4567-4890-a1b2-c3d4e5f6071", "0123abcd-4567-4890-a1b2-c3d4e5f6071g", "0123abcd+4567-4890-a1b2-c3d4e5f60718"} {
		if _, ok := bad.Bytes(); ok {
			t.Errorf("%q read as a uuid", bad)
		}
	}
}
