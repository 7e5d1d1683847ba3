package secrets

import (
	"crypto/sha256"
	"crypto/subtle"
)

// HashCredential hashes an API key or session token for storage and lookup. A plain SHA-256 is
// right for high-entropy secrets: they cannot be guessed, so a slow password hash would only slow
// every request. The label keeps these hashes from matching any other use of SHA-256.
func HashCredential(kind, secret string) []byte {
	h := sha256.New()
	h.Write([]byte("backoffice " + kind + "\x00"))
	h.Write([]byte(secret))
	return h.Sum(nil)
}

// Equal compares two hashes in constant time.
func Equal(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }
