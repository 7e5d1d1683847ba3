package secrets

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
)

// Issued credentials are lower-case base32 (a-z, 2-7) around underscores: no character a shell,
// a URL or a double-click splits on, and a fixed shape secret scanners can match:
//
//	API key:       bo_<8-char prefix>_<52-char secret>     regexp: bo_[a-z2-7]{8}_[a-z2-7]{52}
//	session token: bos_<52-char secret>                    regexp: bos_[a-z2-7]{52}
const (
	apiKeyMark   = "bo_"
	sessionMark  = "bos_"
	prefixBytes  = 5  // 40 bits: 8 base32 characters, enough to find one key among many
	secretBytes  = 32 // 256 bits: beyond guessing, so a plain SHA-256 is a sound hash
	PrefixLength = prefixBytes * 8 / 5
)

var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

func randomText(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return lowerBase32.EncodeToString(b)
}

// NewAPIKey returns a fresh key and its public prefix. The prefix is also inside the key, so
// whoever holds a key (or finds a leaked one) can name it without the secret.
func NewAPIKey() (key, prefix string) {
	prefix = randomText(prefixBytes)
	return apiKeyMark + prefix + "_" + randomText(secretBytes), prefix
}

// NewSessionToken returns a fresh session token.
func NewSessionToken() string { return sessionMark + randomText(secretBytes) }

// APIKeyPrefix returns the public prefix named by s: either a bare prefix, "bo_<prefix>", or a
// whole key (only the prefix is read). ok is false when s has none of these shapes.
func APIKeyPrefix(s string) (prefix string, ok bool) {
	s = strings.TrimPrefix(s, apiKeyMark)
	if len(s) > PrefixLength && s[PrefixLength] == '_' {
		s = s[:PrefixLength]
	}
	if len(s) != PrefixLength || strings.Trim(s, "abcdefghijklmnopqrstuvwxyz234567") != "" {
		return "", false
	}
	return s, true
}
