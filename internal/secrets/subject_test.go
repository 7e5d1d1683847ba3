package secrets_test

import (
	"bytes"
	"testing"

	"backoffice/internal/secrets"
)

// TestSubjectTagsAreKeyedAndDistinct: one subject's tag differs under another master key, two
// subjects' tags differ under one, and a key the ring lacks is an error, not a tag.
func TestSubjectTagsAreKeyedAndDistinct(t *testing.T) {
	k1 := secrets.Key{ID: "k1", Bytes: bytes.Repeat([]byte{1}, secrets.KeySize)}
	k2 := secrets.Key{ID: "k2", Bytes: bytes.Repeat([]byte{2}, secrets.KeySize)}
	r, err := secrets.NewRing(k1, k2)
	if err != nil {
		t.Fatal(err)
	}
	tag := func(key, subject string) []byte {
		b, err := r.SubjectTag(key, subject)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a := tag("k1", "prn_1")
	if len(a) != 32 || !bytes.Equal(a, tag("k1", "prn_1")) {
		t.Fatalf("a tag is 32 bytes and the same each time: %x", a)
	}
	if bytes.Equal(a, tag("k2", "prn_1")) || bytes.Equal(a, tag("k1", "prn_2")) {
		t.Fatal("tags must differ by key and by subject")
	}
	if _, err := r.SubjectTag("k3", "prn_1"); err == nil {
		t.Fatal("a key the ring lacks gave a tag")
	}
}
