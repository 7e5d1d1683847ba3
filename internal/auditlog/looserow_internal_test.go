package auditlog

import (
	"bytes"
	"testing"
)

// The chain's walk and the genesis read a column the same way: a value of its kind is taken
// (text also from bytes, bytes also from text), NULL is told apart, and anything else is noted
// with the words the reports of `audit verify` carry.
func TestLooseRowDecodesAndNotes(t *testing.T) {
	var l looseRow
	if s, ok := l.text([]byte("k1"), "a", false); s != "k1" || !ok {
		t.Errorf("text of bytes = %q, %v", s, ok)
	}
	if s, ok := l.text(nil, "b", true); s != "" || ok {
		t.Errorf("text of a nullable NULL = %q, %v", s, ok)
	}
	if n, ok := l.number(int64(7), "c"); n != 7 || !ok {
		t.Errorf("number = %d, %v", n, ok)
	}
	if _, ok := l.number(nil, "d"); ok {
		t.Error("number of NULL holds one")
	}
	if b := l.bytes("xy", "e"); !bytes.Equal(b, []byte("xy")) {
		t.Errorf("bytes of text = %q", b)
	}
	if b := l.bytes(nil, "f"); b != nil {
		t.Errorf("bytes of NULL = %q", b)
	}
	if got := l.faults(); got != "" {
		t.Fatalf("faults of values of their kinds = %q", got)
	}
	l.text(nil, "id", false)
	l.text(int64(3), "action", false)
	l.number("12345678901234567890123", "seq")
	l.bytes(int64(1), "mac")
	l.note("at is NULL")
	want := `id is NULL, action holds a int64, not text, seq holds the text "12345678901234567890…", not a whole number, mac holds a int64, not bytes, at is NULL`
	if got := l.faults(); got != want {
		t.Errorf("faults\n got %s\nwant %s", got, want)
	}
}
