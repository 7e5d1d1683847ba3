package secrets

import (
	"bytes"
	"errors"
	"testing"
)

func testRing(t *testing.T, seeds ...byte) *Ring {
	t.Helper()
	var keys []Key
	for _, s := range seeds {
		b := bytes.Repeat([]byte{s}, KeySize)
		keys = append(keys, Key{ID: Fingerprint(b), Bytes: b})
	}
	r, err := NewRing(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSealOpenRoundTrip(t *testing.T) {
	r := testRing(t, 1)
	aad := PrincipalAAD("p1", "ssn")
	id, sealed := r.Seal([]byte("123-45-6789"), aad)
	if bytes.Contains(sealed, []byte("123-45-6789")) {
		t.Fatal("sealed value contains the plaintext")
	}
	got, err := r.Open(id, sealed, aad)
	if err != nil || string(got) != "123-45-6789" {
		t.Fatalf("Open = %q, %v", got, err)
	}
}

func TestSealedValueIsBoundToItsPrincipal(t *testing.T) {
	r := testRing(t, 1)
	id, sealed := r.Seal([]byte("123-45-6789"), PrincipalAAD("p1", "ssn"))
	if _, err := r.Open(id, sealed, PrincipalAAD("p2", "ssn")); !errors.Is(err, ErrOpen) {
		t.Fatalf("open under another principal: %v, want ErrOpen", err)
	}
	if _, err := r.Open(id, sealed, PrincipalAAD("p1", "dob")); !errors.Is(err, ErrOpen) {
		t.Fatalf("open as another field: %v, want ErrOpen", err)
	}
}

func TestOldKeysStillOpen(t *testing.T) {
	old := testRing(t, 1)
	id, sealed := old.Seal([]byte("x"), nil)
	rotated := testRing(t, 2, 1)
	if rotated.ActiveKeyID() == id {
		t.Fatal("rotated ring should seal under the new key")
	}
	if got, err := rotated.Open(id, sealed, nil); err != nil || string(got) != "x" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := testRing(t, 2).Open(id, sealed, nil); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("open without the key: %v, want ErrUnknownKey", err)
	}
}

func TestParseMasterKey(t *testing.T) {
	k, err := ParseMasterKey(NewKey())
	if err != nil || len(k.Bytes) != KeySize || k.ID == "" {
		t.Fatalf("ParseMasterKey(NewKey()) = %+v, %v", k.ID, err)
	}
	for _, bad := range []string{"", "not base64!", "c2hvcnQ="} {
		if _, err := ParseMasterKey(bad); err == nil {
			t.Errorf("ParseMasterKey(%q) accepted", bad)
		}
	}
}
