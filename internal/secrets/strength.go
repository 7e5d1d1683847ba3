package secrets

import (
	"fmt"
	"math"
	"strings"
)

// MinCredentialBits is the strength every API key and session token must have: beyond any number
// of guesses, so that its plain SHA-256 (HashCredential) and a request per guess cannot find it.
// Issued credentials carry 256 random bits; an imported one is judged by CredentialStrength.
const MinCredentialBits = 128

// The alphanumeric alphabets a secret may be drawn from, smallest first: a secret's alphanumeric
// characters are credited log2 of the first one that holds them all.
var alphabets = []string{
	"0123456789",
	"0123456789abcdef",
	"0123456789ABCDEF",
	"0123456789abcdefABCDEF",
	"0123456789abcdefghijklmnopqrstuvwxyz",
	"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
	"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
}

// keyboardRows are the rows of a US keyboard, along which people type "random" keys.
var keyboardRows = []string{"1234567890", "qwertyuiop", "asdfghjkl", "zxcvbnm"}

// CredentialStrength estimates, on the low side, the bits of randomness in secret: each of its
// letters and digits is credited log2 of its alphabet (the smallest usual one that holds them
// all: digits, hex of one case, hex, one case and digits, both cases and digits, or a smaller one
// when the secret shows fewer different characters than random draws from that would: see
// alphabetBits), and then whatever a guesser tries first is discounted:
//
//   - a character that repeats the one before it, or is next to it in ASCII or on a keyboard row
//     ("aaaa", "1234", "dcba", "qwerty"), counts nothing;
//   - a character of a stretch of three already seen earlier in the secret ("passwordpassword")
//     counts nothing;
//   - punctuation and separators ("-", "_", ".") count nothing.
//
// The estimate undercounts a random secret (a random base64url key of 43 characters, 256 bits,
// is estimated at about 220, and none of a million such keys under 140), so that what people make
// up (repeats, counting, keyboard walks, a few words) stays under MinCredentialBits. It has no
// dictionary: a long phrase of many words can pass. It never fails: CheckCredential judges the
// characters.
func CredentialStrength(secret string) float64 {
	perChar := alphabetBits(secret)
	copied := repeatedStretches(secret)
	bits := 0.0
	for i := 0; i < len(secret); i++ {
		c := secret[i]
		switch {
		case !isAlnum(c), copied[i]:
		case i > 0 && follows(secret[i-1], c):
		default:
			bits += perChar
		}
	}
	return bits
}

// IssuedCredentialBits is the strength of the keys and tokens the service issues: their random bits.
const IssuedCredentialBits = secretBytes * 8

// CredentialBits is the strength kept beside a credential's hash, which cannot tell it: the
// estimate, in whole bits, of a secret the rule can judge (printable ASCII), 0 for any other.
func CredentialBits(secret string) int {
	for i := 0; i < len(secret); i++ {
		if c := secret[i]; c <= ' ' || c > '~' {
			return 0
		}
	}
	return int(CredentialStrength(secret))
}

// CheckCredential refuses a secret that could not be sent in an Authorization header as it is
// (white space, control or non-ASCII characters) or whose CredentialStrength is under
// MinCredentialBits. Its error never quotes the secret.
func CheckCredential(secret string) error {
	for i := 0; i < len(secret); i++ {
		if c := secret[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("holds white space, a control character or a character outside ASCII (character %d)", i+1)
		}
	}
	if bits := CredentialStrength(secret); bits < MinCredentialBits {
		return fmt.Errorf("too weak to be a credential: about %d bits of randomness by the rule in docs/credentials.md, at least %d needed (use 32 random bytes, e.g. 43 base64url characters)",
			int(bits), MinCredentialBits)
	}
	return nil
}

// alphabetBits is log2 of the alphabet the letters and digits of s look drawn from: the smallest
// usual alphabet that holds them all, or, when s shows fewer different ones than draws from that
// would, the size of the alphabet whose draws would show as few (words repeat their letters:
// "demo-staff-api-key-not-for-production" shows 16 different letters in 31, as 31 draws from 21
// would, not from 36).
func alphabetBits(s string) float64 {
	var alnum strings.Builder
	var seen [128]bool
	distinct := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; isAlnum(c) {
			alnum.WriteByte(c)
			if !seen[c] {
				seen[c] = true
				distinct++
			}
		}
	}
	size := len(alphabets[len(alphabets)-1])
	for _, a := range alphabets {
		if strings.Trim(alnum.String(), a) == "" {
			size = len(a)
			break
		}
	}
	draws := alnum.Len()
	for a := max(distinct, 1); a < size; a++ {
		// The different characters draws from an alphabet of a are expected to show.
		if float64(a)*(1-math.Pow(1-1/float64(a), float64(draws))) >= float64(distinct) {
			size = a
			break
		}
	}
	return math.Log2(float64(max(size, 1)))
}

// repeatedStretches marks every character of each three-character stretch that occurs earlier
// in s (overlaps included: "aaaa" repeats "aaa").
func repeatedStretches(s string) []bool {
	copied := make([]bool, len(s))
	seen := make(map[uint32]bool, len(s))
	for k := 0; k+3 <= len(s); k++ {
		g := uint32(s[k])<<16 | uint32(s[k+1])<<8 | uint32(s[k+2])
		if seen[g] {
			copied[k], copied[k+1], copied[k+2] = true, true, true
		}
		seen[g] = true
	}
	return copied
}

// follows tells a character that repeats prev, or is next to it in ASCII or on a keyboard row.
func follows(prev, c byte) bool {
	if absDiff(c, prev) <= 1 {
		return true
	}
	p, q := lower(prev), lower(c)
	for _, row := range keyboardRows {
		if i := strings.IndexByte(row, p); i >= 0 {
			j := strings.IndexByte(row, q)
			return j >= 0 && (j == i-1 || j == i+1)
		}
	}
	return false
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func absDiff(a, b byte) byte {
	if a > b {
		return a - b
	}
	return b - a
}
