package secrets

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"sync"
	"testing"
)

// The chain key is HKDF of the master key with the documented label, not the master key itself:
// an outside verifier given the master key can recompute a link.
func TestChainMACIsHMACUnderTheDerivedKey(t *testing.T) {
	master := bytes.Repeat([]byte{7}, KeySize)
	r, err := NewRing(Key{ID: "a", Bytes: master})
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.ChainMAC("a", []byte("message"))
	if err != nil {
		t.Fatal(err)
	}
	key, _ := hkdf.Key(sha256.New, master, nil, "backoffice audit chain v1", 32)
	m := hmac.New(sha256.New, key)
	m.Write([]byte("message"))
	if !bytes.Equal(got, m.Sum(nil)) {
		t.Fatal("ChainMAC is not HMAC-SHA-256 under HKDF(master, \"backoffice audit chain v1\")")
	}
	plain := hmac.New(sha256.New, master)
	plain.Write([]byte("message"))
	if bytes.Equal(got, plain.Sum(nil)) {
		t.Fatal("ChainMAC used the master key itself")
	}
}

// Every key of the ring makes links (old links verify after a rotation); a key not in the ring
// is an error, never a link under some other key.
func TestChainMACByKeyID(t *testing.T) {
	r := testRing(t, 1, 2)
	ids := r.KeyIDs()
	a, errA := r.ChainMAC(ids[0], []byte("m"))
	b, errB := r.ChainMAC(ids[1], []byte("m"))
	if errA != nil || errB != nil || bytes.Equal(a, b) {
		t.Fatalf("links under two keys: %x %v, %x %v", a, errA, b, errB)
	}
	if _, err := r.ChainMAC("missing", []byte("m")); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("unknown key: %v", err)
	}
}

// BenchmarkChainMAC is one audit event's link: every event pays it when written and again when
// the checkpoint signer verifies it.
func BenchmarkChainMAC(b *testing.B) {
	r, err := NewRing(Key{ID: "a", Bytes: bytes.Repeat([]byte{7}, KeySize)})
	if err != nil {
		b.Fatal(err)
	}
	msg := bytes.Repeat([]byte("m"), 220)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ChainMAC("a", msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMACKey sets a reused HMAC (macKey, which ChainMAC and SubjectTag use) beside a new one
// a message, on a subject tag's message (an event's target id): the reuse is kept for being
// several times faster.
//
//	go test ./internal/secrets -run '^$' -bench MACKey -count 5
func BenchmarkMACKey(b *testing.B) {
	key, msg := bytes.Repeat([]byte{7}, 32), []byte("0190f3b2-1234-7abc-8def-0123456789ab")
	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m := hmac.New(sha256.New, key)
			m.Write(msg)
			m.Sum(nil)
		}
	})
	b.Run("reused", func(b *testing.B) {
		k := newMACKey(key)
		b.ReportAllocs()
		for b.Loop() {
			k.mac(msg)
		}
	})
}

// Links made at once from many goroutines, under two keys, are each the one made alone: the
// reused HMACs never mix two messages or two keys.
func TestChainMACFromManyGoroutines(t *testing.T) {
	r := testRing(t, 1, 2)
	ids := r.KeyIDs()
	want := map[string][]byte{}
	for _, id := range ids {
		want[id], _ = r.ChainMAC(id, []byte("message "+id))
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				id := ids[(g+i)%len(ids)]
				got, err := r.ChainMAC(id, []byte("message "+id))
				if err != nil || !bytes.Equal(got, want[id]) {
					t.Errorf("goroutine %d, key %s: %x, %v", g, id, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
