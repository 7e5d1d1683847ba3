package secrets

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/trustelem/zxcvbn/adjacency"
	"github.com/trustelem/zxcvbn/frequency"
	"github.com/trustelem/zxcvbn/matching"
	"github.com/trustelem/zxcvbn/scoring"
)

// MinCredentialBits is the strength every API key and session token must have: beyond any number
// of guesses, so that its plain SHA-256 (HashCredential) and a request per guess cannot find it.
// Issued credentials carry 256 random bits; an imported one is judged by CredentialStrength.
const MinCredentialBits = 128

// uuidBits is what a UUID can carry: the random bits of a version 4 UUID; the others hold fewer.
const uuidBits = 122

// CredentialStrength estimates the bits of randomness in secret, by one of two measures:
//
//   - A random token (an optional prefix such as "ghp_" or "sk_live_", then a body in one
//     encoding's alphabet: hex, base32, alphanumerics, base64 or base64url) is credited exactly
//     what its body can hold: its length times log2 of the alphabet (whole bytes for hex, base32
//     and base64). The body must look like random draws from that alphabet (see looksRandom):
//     nothing that people make (repeats, runs along the alphabet or the keyboard, a lopsided mix
//     of character classes, mostly dictionary words) passes as a random token.
//   - Anything else is estimated by zxcvbn (github.com/trustelem/zxcvbn: dictionaries of words,
//     names and common passwords, keyboard walks, sequences, repeats, dates), as the guesses an
//     attacker trying those patterns first needs. A secret zxcvbn finds mostly made of such
//     patterns is credited its patterns alone: what it adds around them (separators, a word
//     zxcvbn does not know) counts nothing.
//
// A body that decodes (hex, base32, base64) to printable text is no stronger than that text
// ("password" repeated, in base64, is "password" repeated). A UUID is credited uuidBits. It
// never fails: CheckCredential judges the characters.
//
// The rule for random tokens is our own because zxcvbn cannot judge them: it credits a character
// it finds no pattern in as a decimal digit (a random hex or base64 token of 128 bits falls short)
// and reads a long secret slowly; the token rule is many times faster (BenchmarkCredentialStrength).
// zxcvbn's dictionaries and keyboard graph serve the token rule's tests too.
func CredentialStrength(secret string) float64 {
	if !printable(secret) {
		return 0
	}
	return strength(secret)
}

// strength is CredentialStrength of s, which may hold spaces (the text a secret decodes to).
func strength(secret string) float64 {
	if isUUID(secret) {
		return uuidBits
	}
	bits, ok := tokenBits(secret)
	if !ok {
		bits = guessBits(secret)
	} else if bits < MinCredentialBits {
		// Too short to pass whatever it is: say how guessable it is too ("0000000000001234").
		bits = min(bits, guessBits(secret))
	}
	bodies := decodedBodies(secret)
	// A body whose bytes count along (00 01 02 …, 0f 1e 2d …) is no stronger than the two bytes
	// that make it, a start and a step, however random its characters look.
	if ok && steadilyDecoded(bodies) {
		bits = min(bits, steadyBits)
	}
	// A body that decodes to text someone chose is no stronger than that text. Random bytes are
	// printable now and then too: only text that zxcvbn's patterns mostly cover counts.
	if text, ok := decodedText(bodies); ok {
		if _, patterned := guesses(text); patterned {
			bits = min(bits, strength(text))
		}
	}
	return bits
}

// IssuedCredentialBits is the strength of the keys and tokens the service issues: their random bits.
const IssuedCredentialBits = secretBytes * 8

// CredentialBits is the strength kept beside a credential's hash, which cannot tell it: the
// estimate, in whole bits, of a secret the rule can judge (printable ASCII), 0 for any other.
func CredentialBits(secret string) int {
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

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// isText tells printable ASCII, spaces included.
func isText(b []byte) bool {
	for _, c := range b {
		if c < ' ' || c > '~' {
			return false
		}
	}
	return true
}

// isUUID tells the 8-4-4-4-12 hex digits of a UUID.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return false
			}
		} else if !isHexDigit(s[i]) {
			return false
		}
	}
	return true
}

// tokenBits credits secret as a random token, if it is one: its body's capacity. A prefix
// (lower-case letters and digits ending in "_" or "-", one or two such parts, as "ghp_",
// "sk_live_", "glpat-", the service's own "bo_<prefix>_"; Slack's "xoxb-" with the numeric ids
// after it) counts nothing before a hex, base32 or base64 body. Before an alphanumeric or
// base64url body it may as well be the body's own beginning (random base64url may begin "ab_"),
// so the secret is judged with fewer parts of its prefix taken away too, and the largest
// capacity is taken: such a prefix may be credited as part of the body.
func tokenBits(secret string) (float64, bool) {
	splits := prefixLengths(secret)
	longest := splits[len(splits)-1]
	if enc := narrowest(secret[longest:]); enc != nil && enc.name != "alphanumeric" && enc.name != "base64url" {
		splits = splits[len(splits)-1:]
	}
	best, ok := 0.0, false
	for _, n := range splits {
		if bits, random := bodyBits(secret[n:]); random && (!ok || bits > best) {
			best, ok = bits, true
		}
	}
	return best, ok
}

// narrowest is the encoding whose alphabet holds s (padding aside), nil for none.
func narrowest(s string) *encoding {
	return classify(strings.TrimRight(s, "="))
}

// prefixLengths are the lengths of the prefixes secret may have, 0 (none) first.
func prefixLengths(secret string) []int {
	lengths := []int{0}
	n := 0
	for part := 0; part < 2; part++ {
		i := n
		for i < len(secret) && i-n < 11 && (isLower(secret[i]) || isDigit(secret[i])) {
			i++
		}
		if i-n < 2 || i >= len(secret) || secret[i] != '_' && secret[i] != '-' {
			break
		}
		n = i + 1
		if part == 0 && n == 5 && strings.HasPrefix(secret, "xox") {
			// Slack: xoxb-<team id>-<bot id>-<secret>.
			for {
				j := n
				for j < len(secret) && isDigit(secret[j]) {
					j++
				}
				if j == n || j >= len(secret) || secret[j] != '-' {
					break
				}
				n = j + 1
			}
			return append(lengths, n)
		}
		lengths = append(lengths, n)
	}
	return lengths
}

// An encoding is an alphabet random tokens are written in: its characters, log2 of its size,
// and whether it carries whole bytes (alphanumerics do not).
type encoding struct {
	name     string
	alphabet string
	bits     float64
	bytes    bool // hex, base32 and base64 carry whole bytes: credit 8 per byte it holds
	// follow is, for each character, the characters that "follow" it: itself, its neighbours in
	// ASCII and on a keyboard, within the alphabet; share is their share of the alphabet.
	follow [128][128]bool
	share  [128]float64
	// mask holds the alphabet's characters; index numbers them, width bits each.
	mask  charSet
	index [128]uint8
	width int
}

// charSet is a set of ASCII characters.
type charSet [2]uint64

func (c *charSet) add(b byte)            { c[b>>6] |= 1 << (b & 63) }
func (c charSet) within(of charSet) bool { return c[0]&^of[0] == 0 && c[1]&^of[1] == 0 }

// encodings, narrowest first: a body is credited the first whose alphabet holds it all.
var encodings = sync.OnceValue(func() []*encoding {
	const digits, lowers, uppers = "0123456789", "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	list := []*encoding{
		{name: "decimal", alphabet: digits},
		{name: "hex", alphabet: digits + "abcdef", bytes: true},
		{name: "hex", alphabet: digits + "ABCDEF", bytes: true},
		{name: "base32", alphabet: lowers + "234567", bytes: true},
		{name: "base32", alphabet: uppers + "234567", bytes: true},
		{name: "mixed-case hex", alphabet: digits + "abcdefABCDEF"},
		{name: "base36", alphabet: digits + lowers},
		{name: "base36", alphabet: digits + uppers},
		{name: "alphanumeric", alphabet: digits + lowers + uppers},
		{name: "base64url", alphabet: digits + lowers + uppers + "-_", bytes: true},
		{name: "base64", alphabet: digits + lowers + uppers + "+/", bytes: true},
	}
	qwerty := adjacency.Graphs["qwerty"].Graph
	for _, e := range list {
		e.bits = math.Log2(float64(len(e.alphabet)))
		e.width = int(math.Ceil(e.bits))
		for i := 0; i < len(e.alphabet); i++ {
			c := e.alphabet[i]
			e.mask.add(c)
			e.index[c] = uint8(i)
			near := string([]byte{c, c - 1, c + 1}) + strings.Join(qwerty[string(c)], "") + strings.Join(qwerty[string(lower(c))], "")
			for j := 0; j < len(near); j++ {
				if d := near[j]; d < 128 && strings.IndexByte(e.alphabet, d) >= 0 && !e.follow[c][d] {
					e.follow[c][d] = true
					e.share[c] += 1 / float64(len(e.alphabet))
				}
			}
		}
	}
	return list
})

// classify returns the narrowest encoding whose alphabet holds body, nil for none.
func classify(body string) *encoding {
	if body == "" {
		return nil
	}
	for i := 0; i < len(body); i++ {
		if body[i] >= 128 {
			return nil
		}
	}
	in := present(body)
	for _, e := range encodings() {
		if in.within(e.mask) {
			return e
		}
	}
	return nil
}

// present is the set of body's ASCII characters.
func present(body string) charSet {
	var set charSet
	for i := 0; i < len(body); i++ {
		if body[i] < 128 {
			set.add(body[i])
		}
	}
	return set
}

// bodyBits is the capacity of body (base64 or base32 padding "=" aside) if it looks like random
// draws from the narrowest alphabet that holds it. An unpadded base32 or base36 body too short to
// pass as such is credited as the first wider alphabet it looks like random draws from that
// credits it enough: base36 of its letters' case, then alphanumerics. Short random base36 or
// alphanumerics may fall within a narrower alphabet (alphanumerics of one case), and must not be
// refused for it; the price is that short base36 or base32 can be credited as alphanumerics.
func bodyBits(body string) (float64, bool) {
	trimmed := strings.TrimRight(body, "=")
	enc := classify(trimmed)
	if enc == nil || len(body)-len(trimmed) > 6 || !looksRandom(trimmed, enc) {
		return 0, false
	}
	if (enc.name == "base32" || enc.name == "base36") && len(body) == len(trimmed) && float64(len(trimmed))*enc.bits < MinCredentialBits {
		for _, wider := range encodings() {
			if wider.name != "base36" && wider.name != "alphanumeric" {
				continue
			}
			if present(trimmed).within(wider.mask) && float64(len(trimmed))*wider.bits >= MinCredentialBits && looksRandom(trimmed, wider) {
				enc = wider
				break
			}
		}
	}
	bits := float64(len(trimmed)) * enc.bits
	if enc.bytes {
		bits = 8 * math.Floor(bits/8)
	}
	return bits, true
}

// falseAlarm bounds the chance that each test of looksRandom refuses a random body, so that none
// of millions of random tokens is taken for a made-up one.
const falseAlarm = 1e-10

// looksRandom tells whether s, written in enc's alphabet, looks like random draws from it: each
// test refuses a string of random draws with a chance under falseAlarm (the bounds are exact
// for repeats and classes; for runs, up to taking the string's own mean share of followers as
// the chance; for words, measured), and what people make up fails at least one:
//
//   - no stretch of k characters occurs twice, for the k at which random draws of its length
//     repeat one with a chance under falseAlarm ("passwordpassword", "0123456789abcdef" repeated);
//   - not too many characters follow the one before them (repeat it, or are next to it in ASCII
//     or on a keyboard: "abcdef", "qwerty", "1qaz2wsx");
//   - each class of characters of the alphabet (digits, lower-case and upper-case letters,
//     punctuation) appears neither too rarely nor too often for random draws ("production-key"
//     holds no upper-case letter in a long base64url body);
//   - in an alphabet of all the letters (base32 and wider), dictionary words (zxcvbn's lists,
//     three letters or more) do not make half of its letters.
func looksRandom(s string, enc *encoding) bool {
	n := len(s)
	if n < 2 {
		return true
	}
	a := float64(len(enc.alphabet))
	// Repeats: (n choose 2) pairs of stretches, each equal with a chance of a^-k.
	pairs := float64(n) * float64(n-1) / 2
	k := int(math.Ceil(math.Log(pairs/falseAlarm) / math.Log(a)))
	if k < n && repeats(s, k, enc) {
		return false
	}
	// Each character follows the one before it with a chance of that one's share; the count of
	// those that do is at most as spread as a binomial of the mean share (Hoeffding).
	follows, share := 0, 0.0
	for i := 1; i < n; i++ {
		share += enc.share[s[i-1]]
		if enc.follow[s[i-1]][s[i]] {
			follows++
		}
	}
	if follows >= tailLimit(n-1, share/float64(n-1)) {
		return false
	}
	var seen [4]int
	for i := 0; i < n; i++ {
		seen[classOf(s[i])]++
	}
	for class, members := range classes {
		size := 0
		for i := 0; i < len(members); i++ {
			if strings.IndexByte(enc.alphabet, members[i]) >= 0 {
				size++
			}
		}
		if size == 0 || size == len(enc.alphabet) {
			continue
		}
		p := float64(size) / a
		if seen[class] >= tailLimit(n, p) || n-seen[class] >= tailLimit(n, 1-p) {
			return false
		}
	}
	return len(enc.alphabet) < 32 || !mostlyWords(s)
}

// classes are the classes of characters whose shares looksRandom weighs: digits, lower-case and
// upper-case letters, punctuation.
var classes = [4]string{"0123456789", "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "-_+/"}

func classOf(c byte) int {
	switch {
	case isDigit(c):
		return 0
	case isLower(c):
		return 1
	case isUpper(c):
		return 2
	}
	return 3
}

// repeats tells whether a stretch of k characters occurs twice in s: the stretches, each packed
// in a number by enc's index of their characters, are sorted, and equal ones meet.
func repeats(s string, k int, enc *encoding) bool {
	if k*enc.width > 64 || len(s) > 256 {
		seen := make(map[string]bool, len(s))
		for i := 0; i+k <= len(s); i++ {
			if seen[s[i:i+k]] {
				return true
			}
			seen[s[i:i+k]] = true
		}
		return false
	}
	var buf [256]uint64
	grams := buf[:0]
	var g uint64
	mask := uint64(1)<<(k*enc.width) - 1
	if k*enc.width == 64 {
		mask = ^uint64(0)
	}
	for i := 0; i < len(s); i++ {
		g = (g<<enc.width | uint64(enc.index[s[i]])) & mask
		if i >= k-1 {
			grams = append(grams, g)
		}
	}
	slices.Sort(grams)
	for i := 1; i < len(grams); i++ {
		if grams[i] == grams[i-1] {
			return true
		}
	}
	return false
}

// tailLimit is the least number of successes in n draws, each a success with a chance of p (or
// a little less: p is rounded up to 1/1024), that has a chance under falseAlarm. Computed once
// for each n and p.
func tailLimit(n int, p float64) int {
	key := tailKey{n, int(math.Ceil(p * 1024))}
	if k, ok := tailLimits.Load(key); ok {
		return k.(int)
	}
	q := float64(key.p) / 1024
	k := max(int(float64(n)*q), 1)
	for k <= n && upperTail(n, q, k) >= falseAlarm {
		k++
	}
	tailLimits.Store(key, k)
	return k
}

type tailKey struct{ n, p int }

var tailLimits sync.Map

// upperTail is the chance of at least k successes in n draws that each succeed with a chance p.
// Only the tail above the mean is computed: below it, the chance is over a half.
func upperTail(n int, p float64, k int) float64 {
	switch {
	case float64(k) <= float64(n)*p:
		return 1
	case k > n:
		return 0
	case p <= 0:
		return 0
	case p >= 1:
		return 1
	}
	lg, _ := math.Lgamma(float64(n + 1))
	lk, _ := math.Lgamma(float64(k + 1))
	lr, _ := math.Lgamma(float64(n - k + 1))
	term := math.Exp(lg - lk - lr + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
	sum := 0.0
	for i := k; i <= n && term > sum*1e-12; i++ {
		sum += term
		term *= float64(n-i) / float64(i+1) * p / (1 - p)
	}
	return sum
}

// words is the set of zxcvbn's dictionary words of three letters or more, in lower case.
var words = sync.OnceValue(func() map[string]bool {
	set := map[string]bool{}
	for _, list := range frequency.FrequencyLists {
		for _, w := range list {
			if len(w) >= 3 && strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") == "" {
				set[w] = true
			}
		}
	}
	return set
})

// mostlyWords tells whether dictionary words make at least half of the letters of s: each run of
// letters ("production", "Service", "KEY") that is a word counts its letters.
func mostlyWords(s string) bool {
	letters, inWords := 0, 0
	dict := words()
	var buf [32]byte
	for i := 0; i < len(s); {
		if !isLetter(s[i]) {
			i++
			continue
		}
		j := i + 1
		if isUpper(s[i]) && j < len(s) && isUpper(s[j]) {
			for j < len(s) && isUpper(s[j]) {
				j++
			}
		} else {
			for j < len(s) && isLower(s[j]) {
				j++
			}
		}
		letters += j - i
		if m := j - i; m >= 3 && m <= len(buf) {
			for x := 0; x < m; x++ {
				buf[x] = lower(s[i+x])
			}
			if dict[string(buf[:m])] {
				inWords += m
			}
		}
		i = j
	}
	return letters > 0 && 2*inWords >= letters
}

// maxGuessLength bounds what zxcvbn reads of a secret: its time grows faster than the length,
// and a secret is no weaker than its beginning.
const maxGuessLength = 100

// guessBits is log2 of the guesses zxcvbn estimates for secret (its first maxGuessLength
// characters), without its allowance for the number of patterns; when zxcvbn's patterns cover
// half of it or more, their guesses alone.
func guessBits(secret string) float64 {
	bits, _ := guesses(secret)
	return bits
}

// guesses is zxcvbn's estimate of secret, in bits, and whether its patterns (words, keyboard
// walks, repeats, sequences, dates) cover half of it or more, in which case only the patterns
// count.
func guesses(secret string) (bits float64, patterned bool) {
	s := secret[:min(len(secret), maxGuessLength)]
	seq := scoring.MostGuessableMatchSequence(s, matching.Omnimatch(s, nil), true)
	covered, patterns := 0, 0.0
	for _, m := range seq.Sequence {
		if m.Pattern != "bruteforce" {
			covered += m.J - m.I + 1
			patterns += math.Log2(max(m.Guesses, 1))
		}
	}
	if 2*covered >= len(s) {
		return patterns, true
	}
	return math.Log2(max(seq.Guesses, 1)), false
}

// decodedText is the first of a secret's decoded bodies (see decodedBodies) that is printable
// text.
func decodedText(bodies [][]byte) (string, bool) {
	for _, b := range bodies {
		if isText(b) {
			return string(b), true
		}
	}
	return "", false
}

// decodedBodies are the bytes secret's body decodes to (hex, base32 or base64), for each prefix
// it may have.
func decodedBodies(secret string) [][]byte {
	var out [][]byte
	for _, n := range prefixLengths(secret) {
		s := secret[n:]
		var b []byte
		var err error
		switch enc := narrowest(s); {
		case enc == nil:
			continue
		case enc.name == "hex" || enc.name == "decimal":
			b, err = hex.DecodeString(s)
		case enc.name == "base32":
			b, err = base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(strings.ToUpper(strings.TrimRight(s, "=")))
		default:
			t := strings.TrimRight(s, "=")
			b, err = base64.RawStdEncoding.DecodeString(t)
			if err != nil {
				b, err = base64.RawURLEncoding.DecodeString(t)
			}
		}
		if err == nil && len(b) > 0 {
			out = append(out, b)
		}
	}
	return out
}

// steadyBits is what a body of bytes counting along is credited: its start and its step.
const steadyBits = 16

// steadilyDecoded tells whether one of a secret's decoded bodies (see decodedBodies) has bytes
// that step by the same difference more often than random bytes do: each byte repeats the step
// before it with a chance of 1/256, and the count of those that do is held to the binomial's
// tail (tailLimit), as looksRandom holds a body's characters.
func steadilyDecoded(bodies [][]byte) bool {
	for _, b := range bodies {
		if len(b) < 4 {
			continue
		}
		same := 0
		for i := 2; i < len(b); i++ {
			if b[i]-b[i-1] == b[i-1]-b[i-2] {
				same++
			}
		}
		if same >= tailLimit(len(b)-2, 1.0/256) {
			return true
		}
	}
	return false
}

func lower(c byte) byte {
	if isUpper(c) {
		return c + 'a' - 'A'
	}
	return c
}

func isDigit(c byte) bool    { return '0' <= c && c <= '9' }
func isLower(c byte) bool    { return 'a' <= c && c <= 'z' }
func isUpper(c byte) bool    { return 'A' <= c && c <= 'Z' }
func isLetter(c byte) bool   { return isLower(c) || isUpper(c) }
func isHexDigit(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
