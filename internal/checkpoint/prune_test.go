package checkpoint

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"strings"
	"testing"
	"time"
)

// A prune note reads back as signed, holds only under its key, and a note altered in any line, or
// not in the form SignPrune writes, is refused or fails its signature.
func TestPruneNote(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	_, other, _ := ed25519.GenerateKey(nil)
	p := Prune{Origin: DefaultOrigin, Below: 201, Link: strings.Repeat("ab", 32), Digest: bytes.Repeat([]byte{7}, 32),
		Archive: sha256.Sum256([]byte("archive")), KeyID: "k1"}
	p.Root[0] = 9
	signed, err := SignPrune(p, time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC), key)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParsePrune(signed.Note)
	if err != nil {
		t.Fatalf("%v\n%s", err, signed.Note)
	}
	if got.Below != 201 || got.Link != p.Link || !bytes.Equal(got.Digest, p.Digest) || got.Root != p.Root || got.Archive != p.Archive || got.KeyID != "k1" || got.At != "2026-12-02T14:00:00Z" {
		t.Fatalf("read back %+v, signed %+v", got, signed)
	}
	if !got.SignedBy(key.Public().(ed25519.PublicKey)) || got.SignedBy(other.Public().(ed25519.PublicKey)) {
		t.Fatal("SignedBy holds under the wrong key, or not under its own")
	}
	if !strings.Contains(string(signed.Note), "\nbackoffice audit prune v1\nbelow 201\ntree 200 ") {
		t.Errorf("the note's text is not the documented one:\n%s", signed.Note)
	}
	altered := bytes.Replace(signed.Note, []byte("below 201"), []byte("below 202"), 1)
	if q, err := ParsePrune(altered); err == nil && q.SignedBy(key.Public().(ed25519.PublicKey)) {
		t.Error("a note altered after signing still holds")
	}
	note := string(signed.Note)
	for _, bad := range []string{"not a note", strings.Replace(note, "tree 200", "tree 199", 1), strings.Replace(note, "backoffice audit prune v1", "backoffice audit prune v2", 1),
		// What SignPrune never writes: no origin, a time outside UTC, a time not RFC 3339's.
		strings.Replace(note, DefaultOrigin+"\n", "\n", 1),
		strings.Replace(note, "signed 2026-12-02T14:00:00Z", "signed 2026-12-02T15:00:00+01:00", 1),
		strings.Replace(note, "signed 2026-12-02T14:00:00Z", "signed 2026-12-02T14:00:00.000Z", 1),
		strings.Replace(note, "signed 2026-12-02T14:00:00Z", "signed yesterday", 1)} {
		if _, err := ParsePrune([]byte(bad)); err == nil {
			t.Errorf("ParsePrune accepted:\n%s", bad)
		}
	}
	if _, err := SignPrune(Prune{Origin: DefaultOrigin, Below: 1, Digest: p.Digest, KeyID: "k1"}, time.Now(), key); err == nil {
		t.Error("a prune below seq 1 was signed")
	}
}

// FuzzParsePrune reads whatever the database holds as a prune note (a database attacker writes
// what they like there): ParsePrune never panics, and a note it accepts is in the one form
// SignPrune writes: its fields, signed again, give the same text.
//
//	go test ./internal/checkpoint -run '^$' -fuzz FuzzParsePrune -fuzztime 1m
func FuzzParsePrune(f *testing.F) {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, ed25519.SeedSize))
	p := Prune{Origin: DefaultOrigin, Below: 201, Link: strings.Repeat("ab", 32), Digest: bytes.Repeat([]byte{7}, 32),
		Archive: sha256.Sum256([]byte("archive")), KeyID: "k1"}
	at := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	for _, link := range []string{p.Link, ""} {
		p.Link = link
		signed, err := SignPrune(p, at, key)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(signed.Note)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		got, err := ParsePrune(msg)
		if err != nil {
			return
		}
		when, err := time.Parse(time.RFC3339Nano, got.At)
		if err != nil {
			t.Fatalf("accepted a note signed at %q, which SignPrune never writes", got.At)
		}
		again, err := SignPrune(got, when, key)
		if err != nil {
			t.Fatalf("a note ParsePrune accepts cannot be signed again: %v\n%q", err, msg)
		}
		if again.text() != got.text() {
			t.Fatalf("the fields read give another text:\n%q\n%q", again.text(), got.text())
		}
	})
}
