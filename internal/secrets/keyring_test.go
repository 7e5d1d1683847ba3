package secrets

import (
	"bytes"
	"encoding/base64"
	"errors"
	"regexp"
	"strings"
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

// TestBadKeyMessages: a refused key's message says what the key was taken for and how to make a
// good one, in a master key and in a ring's entry alike.
func TestBadKeyMessages(t *testing.T) {
	hexKey := strings.Repeat("0123456789abcdef", 4)
	hint := "want base64 of 32 random bytes (make one: head -c 32 /dev/urandom | base64)"
	for _, tc := range []struct{ key, want string }{
		{hexKey, "master key looks like hex (64 hex digits); " + hint},
		{strings.ToUpper(hexKey), "master key looks like hex (64 hex digits); " + hint},
		{"not base64!", "master key is not valid base64; " + hint},
		{"c2hvcnQ=", "master key decodes to 5 bytes; " + hint},
		{base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xff}, 48)), "master key decodes to 48 bytes; " + hint},
	} {
		if _, err := ParseMasterKey(tc.key); err == nil || err.Error() != tc.want {
			t.Errorf("ParseMasterKey(%q) = %v, want %q", tc.key, err, tc.want)
		}
	}
	if _, err := ParseKeyRing("new:" + hexKey); err == nil || err.Error() != `entry 1: key "new" looks like hex (64 hex digits); `+hint {
		t.Errorf("ParseKeyRing(hex) = %v", err)
	}
}

func TestParseKeyRing(t *testing.T) {
	a, b := NewKey(), NewKey()
	keys, err := ParseKeyRing(" new:" + b + " ,old:" + a + ",\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0].ID != "new" || keys[1].ID != "old" {
		t.Fatalf("ParseKeyRing ids = %v, want [new old]", []string{keys[0].ID, keys[1].ID})
	}
	ring, err := NewRing(keys...)
	if err != nil || ring.ActiveKeyID() != "new" {
		t.Fatalf("NewRing: active %q, %v; want new", ring.ActiveKeyID(), err)
	}
	if _, err := ParseKeyRing("new:" + b + "\nold:" + a); err != nil {
		t.Errorf("one entry per line: %v", err)
	}
	for name, spec := range map[string]string{
		"empty":             "",
		"only commas":       ",,",
		"no id":             b,
		"empty id":          ":" + b,
		"bad id character":  "a.b:" + b,
		"id too long":       strings.Repeat("k", MaxKeyIDLength+1) + ":" + b,
		"not base64":        "k1:not base64!",
		"short key":         "k1:c2hvcnQ=",
		"duplicate id":      "k1:" + a + ",k1:" + b,
		"same key twice":    "k1:" + a + ",k2:" + a,
		"trailing bad item": "k1:" + a + ",junk",
		"key first":         b + ":k1",
		"key first, second": "k1:" + a + "," + b + ":k2",
	} {
		if _, err := ParseKeyRing(spec); err == nil {
			t.Errorf("%s: ParseKeyRing accepted it", name)
		} else if strings.Contains(err.Error(), a) || strings.Contains(err.Error(), b) {
			t.Errorf("%s: the error shows key material: %v", name, err)
		}
	}
}

func TestValidKeyID(t *testing.T) {
	for id, want := range map[string]bool{"k1": true, "2026-11_rotation": true, "kd0a1b2c3d4e5f6a7": true,
		"": false, "a b": false, "a:b": false, "ключ": false, strings.Repeat("x", MaxKeyIDLength): true} {
		if got := ValidKeyID(id); got != want {
			t.Errorf("ValidKeyID(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestIssuedCredentials(t *testing.T) {
	key, prefix := NewAPIKey()
	if !regexp.MustCompile(`^bo_[a-z2-7]{8}_[a-z2-7]{52}$`).MatchString(key) {
		t.Errorf("API key %q does not have the documented shape", key)
	}
	if !strings.HasPrefix(key, "bo_"+prefix+"_") {
		t.Errorf("key %q does not carry its prefix %q", key, prefix)
	}
	for _, s := range []string{prefix, "bo_" + prefix, key} {
		if got, ok := APIKeyPrefix(s); !ok || got != prefix {
			t.Errorf("APIKeyPrefix(%q) = %q, %v; want %q", s, got, ok, prefix)
		}
	}
	for _, s := range []string{"", "bo_", "ABCDEFGH", "abc", "abcdefgh1", "demo-staff-api-key-not-for-production"} {
		if got, ok := APIKeyPrefix(s); ok {
			t.Errorf("APIKeyPrefix(%q) = %q, want none", s, got)
		}
	}
	if other, _ := NewAPIKey(); other == key {
		t.Error("two keys are the same")
	}
	if tok := NewSessionToken(); !regexp.MustCompile(`^bos_[a-z2-7]{52}$`).MatchString(tok) {
		t.Errorf("session token %q does not have the documented shape", tok)
	}
}
