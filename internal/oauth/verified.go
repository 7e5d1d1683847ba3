package oauth

import (
	"sync"
	"time"

	"backoffice/internal/domain"
)

// verifiedEntries bounds the verified tokens kept: when full, the expired ones go, and if that is
// not enough, all. A client reuses its token for its whole lifetime, so the live tokens are about
// as many as the clients.
const verifiedEntries = 10_000

// verifiedToken is what a token's full check found: the user it names, the key that signed it,
// and when it expires.
type verifiedToken struct {
	ref        domain.UserRef
	kid        string
	thumbprint string
	expiry     time.Time
}

// verifiedCache keeps the tokens that passed every check, by the SHA-256 of the token, so that a
// token used again costs a hash and a map lookup instead of a signature check, which costs several
// times a whole request (BenchmarkVerify). A kept token is taken as verified again only while it
// has not expired and the key that signed it is still in a trusted key set under the same kid and
// thumbprint: a key removed or replaced at the provider, or keys the provider has not confirmed
// within their trusted time, send the token through the full check again (which then refuses
// it). Nothing else about a token can change. The user it names is read on every request
// (internal/auth), never kept here. Refusals are not kept.
type verifiedCache struct {
	mu      sync.Mutex
	entries map[[32]byte]verifiedToken
}

func newVerifiedCache() *verifiedCache {
	return &verifiedCache{entries: make(map[[32]byte]verifiedToken)}
}

// get returns the user of a token verified before, if that still holds at now.
func (c *verifiedCache) get(sum [32]byte, now time.Time, keys *keyCache) (domain.UserRef, bool) {
	c.mu.Lock()
	e, ok := c.entries[sum]
	c.mu.Unlock()
	if !ok || now.After(e.expiry.Add(Leeway)) {
		return domain.UserRef{}, false
	}
	s := keys.fresh(now)
	if s == nil || !s.has(e.kid, e.thumbprint) {
		return domain.UserRef{}, false
	}
	return e.ref, true
}

// put keeps a token that passed every check at now.
func (c *verifiedCache) put(sum [32]byte, t verifiedToken, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= verifiedEntries {
		for k, e := range c.entries {
			if now.After(e.expiry.Add(Leeway)) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= verifiedEntries {
			clear(c.entries)
		}
	}
	c.entries[sum] = t
}
