package ratelimit

import (
	"fmt"
	"testing"
)

func TestKnownRemembersSuccessesPerAddress(t *testing.T) {
	k := NewKnown(0, 0)
	if k.Has("192.0.2.1", "key-a") {
		t.Fatal("an empty Known has a credential")
	}
	k.Remember("192.0.2.1", "key-a")
	k.Remember("192.0.2.1", "key-a")
	if !k.Has("192.0.2.1", "key-a") || k.size() != 1 {
		t.Errorf("after two successes: has %v, len %d", k.Has("192.0.2.1", "key-a"), k.size())
	}
	// Known at one address says nothing of another.
	if k.Has("192.0.2.2", "key-a") || k.Has("192.0.2.1", "key-b") {
		t.Error("a credential is known where it never succeeded")
	}
}

// An address holds at most perAddr credentials: the least recently successful one is forgotten,
// and a success makes a credential the most recent again.
func TestKnownForgetsAnAddressesLeastRecentCredential(t *testing.T) {
	k := NewKnown(3, 100)
	for _, c := range []string{"a", "b", "c", "a", "d"} {
		k.Remember("192.0.2.1", c)
	}
	for c, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		if k.Has("192.0.2.1", c) != want {
			t.Errorf("credential %s known: %v, want %v", c, !want, want)
		}
	}
	if k.size() != 3 {
		t.Errorf("len %d, want 3", k.size())
	}
}

// In all, at most maxEntries credentials are held, however many addresses succeed.
func TestKnownIsBoundedOverall(t *testing.T) {
	k := NewKnown(4, 10)
	for i := range 1000 {
		k.Remember(fmt.Sprintf("addr-%d", i%300), fmt.Sprintf("key-%d", i))
		if k.size() > 10 {
			t.Fatalf("after %d successes: %d remembered, bound 10", i+1, k.size())
		}
	}
	// The newest success is always kept.
	if !k.Has("addr-99", "key-999") {
		t.Error("the newest success was forgotten")
	}
	n := 0
	for a, creds := range k.addrs {
		if len(creds) == 0 {
			t.Errorf("address %s kept with no credential", a)
		}
		n += len(creds)
	}
	if n != k.size() {
		t.Errorf("counted %d, held %d", k.size(), n)
	}
}

func BenchmarkKnownRemember(b *testing.B) {
	k := NewKnown(0, 0)
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprintf("%032d", i)
	}
	for i := 0; b.Loop(); i++ {
		k.Remember("192.0.2.1", keys[i%len(keys)])
	}
}
