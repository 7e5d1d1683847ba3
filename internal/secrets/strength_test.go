package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"
)

// What people make up is refused, however long: repeats, counting, keyboard walks, words,
// repeated words, a UUID (122 random bits at most), white space and characters a header cannot
// carry as they are. The error never quotes the secret.
func TestWeakSecretsAreRefused(t *testing.T) {
	for _, s := range []string{
		"aaaaaaaaaaaaaaaa",
		"0000000000001234",
		"passwordpassword",
		"                ",
		strings.Repeat("a", 1024),
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
		"qwertyuiopasdfghjklzxcvbnm1234567890QWERTYUIOPASDFGHJKLZXCVBNM",
		"correct-horse-battery-staple-correct-horse-battery-staple",
		"Tr0ub4dor&3Tr0ub4dor&3Tr0ub4dor&3Tr0ub4dor&3",
		"demo-staff-api-key-not-for-production",
		"example-api-key-change-me",
		"3f0c9a2e-1b2c-4d5e-8f90-123456789abc",
		"staff-key-0000000000000001",
		"tab\tinside-" + strings.Repeat("x", 40),
		"café-" + randomBase64URL(rand.New(rand.NewPCG(1, 1)), 32),
	} {
		err := CheckCredential(s)
		if err == nil {
			t.Errorf("%q (estimated %.0f bits) accepted", s, CredentialStrength(s))
			continue
		}
		if strings.Contains(err.Error(), s) {
			t.Errorf("the error quotes the secret: %v", err)
		}
	}
}

// Random secrets pass in the usual encodings of 32 random bytes: base64url (43 characters, as the
// issue asks), base64, hex, base32, and the service's own issued keys and tokens. Each is tried on
// many random draws from a fixed seed: the estimate undercounts, and must not refuse any.
func TestRandomSecretsAreAccepted(t *testing.T) {
	r := rand.New(rand.NewChaCha8([32]byte{30}))
	encodings := map[string]func([]byte) string{
		"base64url": base64.RawURLEncoding.EncodeToString,
		"base64":    base64.StdEncoding.EncodeToString,
		"hex":       hex.EncodeToString,
		"base32":    lowerBase32.EncodeToString,
	}
	const draws = 20000
	for name, enc := range encodings {
		b := make([]byte, 32)
		for range draws {
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			if s := enc(b); CheckCredential(s) != nil {
				t.Fatalf("random %s %q refused: %v", name, s, CheckCredential(s))
			}
		}
	}
	for range draws {
		key, _ := NewAPIKey()
		if err := CheckCredential(key); err != nil {
			t.Fatalf("issued key refused: %v", err)
		}
		if err := CheckCredential(NewSessionToken()); err != nil {
			t.Fatalf("issued session token refused: %v", err)
		}
	}
}

// The estimate's rules, one by one: each discount applies to what it names and nothing else.
func TestCredentialStrengthRules(t *testing.T) {
	perBase62 := 5.954 // log2(62)
	cases := []struct {
		name   string
		secret string
		lo, hi float64
	}{
		{"one character repeated counts nothing past the first", "aaaaaaaaaaaaaaaaaaaaaa", 0, 0.01},
		{"counting counts its first character only", "0123456789", 3.3, 3.33},
		{"punctuation counts nothing", "--__..~~", 0, 0.01},
		{"a stretch seen before counts nothing", "k7Qm" + "k7Qm", 0, 4 * perBase62},
		{"a keyboard walk counts its first character", "qwertyuiop", 0, 5.2},
		{"distinct characters of both cases and digits count log2(62) each", "aZ3kQ9xM", 8*perBase62 - 0.01, 8*perBase62 + 0.01},
	}
	for _, c := range cases {
		if got := CredentialStrength(c.secret); got < c.lo || got > c.hi {
			t.Errorf("%s: %q estimated %.2f, want %.2f to %.2f", c.name, c.secret, got, c.lo, c.hi)
		}
	}
}

func randomBase64URL(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func BenchmarkCredentialStrength(b *testing.B) {
	s := randomBase64URL(rand.New(rand.NewPCG(1, 2)), 32)
	for b.Loop() {
		CredentialStrength(s)
	}
}
