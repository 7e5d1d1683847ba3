package secrets

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// What people make up is refused, however long, in any encoding: repeats, counting, keyboard
// walks, words and phrases, repeated words, text in base64, a UUID (122 random bits at most),
// white space and characters a header cannot carry as they are. The error never quotes the
// secret.
func TestGuessableSecretsAreRefused(t *testing.T) {
	for _, s := range []string{
		// The issue's: "password" four times in base64, a keyboard column walk repeated in upper
		// case, a descriptive name.
		base64.StdEncoding.EncodeToString([]byte(strings.Repeat("password", 4))),
		base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("password", 4))),
		hex.EncodeToString([]byte(strings.Repeat("password", 4))),
		strings.Repeat("1QAZ2WSX3EDC4RFV5TGB6YHN7UJM8IK,9OL.0P;/", 2),
		strings.Repeat("1QAZ2WSX3EDC4RFV5TGB6YHN7UJM8IK,9OL.0P;/", 4),
		strings.Repeat("1QAZ2WSX3EDC4RFV5TGB6YHN7UJM8IK9OL0P", 2),
		"1QAZ2WSX3EDC4RFV5TGB6YHN7UJM8IK9OL0P",
		"kubernetes-production-backoffice-service-account-key-2026",
		"KubernetesProductionBackofficeServiceAccountKey2026",
		"sk_live_kubernetes-production-backoffice-service-account-key-2026",
		"my-service-key-for-the-api",
		// Earlier ones.
		"aaaaaaaaaaaaaaaa",
		"0000000000001234",
		"passwordpassword",
		"                ",
		strings.Repeat("a", 1024),
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		// Bytes counting along, in hex and base64: random-looking characters, no randomness.
		"000102030405060708090a0b0c0d0e0f",
		"0f1e2d3c4b5a69788796a5b4c3d2e1f0",
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		base64.RawURLEncoding.EncodeToString([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31}),
		"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
		"qwertyuiopasdfghjklzxcvbnm1234567890QWERTYUIOPASDFGHJKLZXCVBNM",
		"correct-horse-battery-staple-correct-horse-battery-staple",
		"Tr0ub4dor&3Tr0ub4dor&3Tr0ub4dor&3Tr0ub4dor&3",
		"demo-staff-api-key-not-for-production",
		"demo-partner-api-key-not-for-production",
		"demo-session-token-not-for-production",
		"example-api-key-change-me",
		"3f0c9a2e-1b2c-4d5e-8f90-123456789abc",
		"staff-key-0000000000000001",
		"tab\tinside-" + strings.Repeat("x", 40),
		"café-" + randomToken(rand.New(rand.NewPCG(1, 1)), base64.RawURLEncoding.EncodeToString, 32),
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

// A format of random tokens: make draws one from r.
type format struct {
	name string
	make func(r *rand.Rand) string
}

// randomFormats are the formats of random tokens every one of which must pass: 128, 160, 192 and
// 256 random bits in hex (either case), base64, base64url, base32 (either case, padded or not)
// and alphanumerics, each bare and after a prefix, and the shapes of real providers' tokens.
func randomFormats() []format {
	upperBase32 := base32.StdEncoding
	encodings := []struct {
		name string
		enc  func([]byte) string
	}{
		{"hex", hex.EncodeToString},
		{"HEX", func(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) }},
		{"base64", base64.StdEncoding.EncodeToString},
		{"base64url", base64.RawURLEncoding.EncodeToString},
		{"base32", upperBase32.EncodeToString},
		{"base32 lower unpadded", lowerBase32.EncodeToString},
	}
	var formats []format
	for _, bits := range []int{128, 160, 192, 256} {
		for _, prefix := range []string{"", "tok_"} {
			for _, e := range encodings {
				formats = append(formats, format{fmt.Sprintf("%s%s %d", prefix, e.name, bits), func(r *rand.Rand) string {
					return prefix + randomToken(r, e.enc, bits/8)
				}})
			}
			n := int(math.Ceil(float64(bits) / math.Log2(62)))
			formats = append(formats, format{fmt.Sprintf("%salphanumeric %d", prefix, bits), func(r *rand.Rand) string {
				return prefix + randomAlnum(r, n)
			}})
			for _, b36 := range []struct{ name, alphabet string }{
				{"base36", "0123456789abcdefghijklmnopqrstuvwxyz"}, {"BASE36", "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"},
			} {
				n := int(math.Ceil(float64(bits) / math.Log2(36)))
				formats = append(formats, format{fmt.Sprintf("%s%s %d", prefix, b36.name, bits), func(r *rand.Rand) string {
					return prefix + randomFrom(r, b36.alphabet, n)
				}})
			}
		}
	}
	return append(formats,
		// GitHub: 36 alphanumerics (30 random and a checksum, taken as random here).
		format{"github ghp_", func(r *rand.Rand) string { return "ghp_" + randomAlnum(r, 36) }},
		format{"github github_pat_", func(r *rand.Rand) string {
			return "github_pat_" + randomAlnum(r, 22) + "_" + randomAlnum(r, 59)
		}},
		format{"stripe sk_live_", func(r *rand.Rand) string { return "sk_live_" + randomAlnum(r, 24) }},
		format{"slack xoxb-", func(r *rand.Rand) string {
			return fmt.Sprintf("xoxb-%d-%d-%s", 100000000000+r.IntN(900000000000), 1000000000000+r.Int64N(9000000000000), randomAlnum(r, 24))
		}},
		// GitLab's 20-character tokens hold 120 bits at most (refused, as a UUID is); 26 characters of
		// the same alphabet, 156.
		format{"gitlab glpat- 26", func(r *rand.Rand) string { return "glpat-" + randomFrom(r, alnum+"-_", 26) }},
		format{"aws secret key", func(r *rand.Rand) string { return randomFrom(r, alnum+"+/", 40) }},
		format{"issued API key", func(*rand.Rand) string { k, _ := NewAPIKey(); return k }},
		format{"issued session token", func(*rand.Rand) string { return NewSessionToken() }},
	)
}

// drawsPerFormat random tokens of each format are judged: none may be refused.
const drawsPerFormat = 100_000

// Random tokens pass, every one: each format is tried on drawsPerFormat draws from a fixed seed
// (2,000 with -short), the formats in parallel.
func TestRandomTokensAreAccepted(t *testing.T) {
	draws := drawsPerFormat
	if testing.Short() {
		draws = 2_000
	}
	for i, f := range randomFormats() {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewChaCha8([32]byte{48, byte(i)}))
			refused, weakest := 0, math.Inf(1)
			for range draws {
				s := f.make(r)
				bits := CredentialStrength(s)
				if bits < MinCredentialBits {
					if refused == 0 {
						t.Errorf("%q refused (%.0f bits)", s, bits)
					}
					refused++
				}
				weakest = min(weakest, bits)
			}
			if refused > 0 {
				t.Fatalf("%d of %d refused", refused, draws)
			}
			t.Logf("%d draws, none refused; the weakest credited %.0f bits", draws, weakest)
		})
	}
}

// The credit of a random token is exactly what its body holds, a prefix before a hex, base32 or
// base64 body counting nothing; a random token under 128 bits is refused. (An unpadded base32
// body of 22 to 25 characters, 110 to 125 bits, passes: it is credited as the random
// alphanumerics it may as well be.)
func TestRandomTokenCredit(t *testing.T) {
	r := rand.New(rand.NewChaCha8([32]byte{1}))
	cases := []struct {
		name   string
		secret string
		want   float64
	}{
		{"32 random bytes in base64", randomToken(r, base64.StdEncoding.EncodeToString, 32), 256},
		{"16 random bytes in hex, after a prefix", "tok_" + randomToken(r, hex.EncodeToString, 16), 128},
		{"20 random bytes in padded base32", randomToken(r, base32.StdEncoding.EncodeToString, 20), 160},
		{"24 random bytes in base64, after a prefix", "sk_live_" + randomToken(r, base64.StdEncoding.EncodeToString, 24), 192},
		{"22 alphanumerics", "Kq3ZrT8mWb2XyPn7VcLd4H", 22 * math.Log2(62)},
		{"24 alphanumerics that fall within base32's alphabet", "sk_live_omdx2co5hgzz7zm5fruidps2", 24 * math.Log2(62)},
		{"an issued session token: 52 base32 characters", "bos_" + randomToken(r, lowerBase32.EncodeToString, 32), 256},
		{"22 alphanumerics of one case (or base36): credited as alphanumerics", "k3m9x0q8w1z7r5t2y4u6p8", 22 * math.Log2(62)},
		{"16 random bytes in base32 that decode to printable bytes", "mqudosrunbpc4xbcevsucmztl4", 128},
		{"a UUID", "6f1c8a0e-3b7d-4e2a-9c51-0d8e7f6a5b4c", 122},
	}
	for _, c := range cases {
		if got := CredentialStrength(c.secret); math.Abs(got-c.want) > 0.1 {
			t.Errorf("%s: %q credited %.2f, want %.2f", c.name, c.secret, got, c.want)
		}
	}
	for _, s := range []string{
		randomToken(r, base64.RawURLEncoding.EncodeToString, 12),
		randomToken(r, hex.EncodeToString, 15),
		"tok_" + randomToken(r, base32.StdEncoding.EncodeToString, 14), // padded: base32 for sure
	} {
		if err := CheckCredential(s); err == nil {
			t.Errorf("%q, under 128 random bits, accepted (%.0f bits)", s, CredentialStrength(s))
		}
	}
}

const alnum = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

func randomToken(r *rand.Rand, enc func([]byte) string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return enc(b)
}

func randomAlnum(r *rand.Rand, n int) string { return randomFrom(r, alnum, n) }

func randomFrom(r *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// The rule's speed on random tokens (the import judges each credential once) and on a phrase,
// which zxcvbn judges.
func BenchmarkCredentialStrength(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ name, secret string }{
		{"base64url 256", randomToken(r, base64.RawURLEncoding.EncodeToString, 32)},
		{"hex 128", randomToken(r, hex.EncodeToString, 16)},
		{"phrase", "kubernetes-production-backoffice-service-account-key-2026"},
		{"1024 characters", strings.Repeat("a", 1024)},
	} {
		CredentialStrength(c.secret) // loads the dictionaries once, before the clock runs
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				CredentialStrength(c.secret)
			}
		})
	}
}
