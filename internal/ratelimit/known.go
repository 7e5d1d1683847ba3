package ratelimit

import "sync"

// Known remembers, for each client address, the credentials that have succeeded from it (by the
// hash they are looked up by, never the secret): the addresses' "device cookies" of OWASP's
// lockout advice, which let a client that is known to work keep working from an address that a
// guesser behind it has locked. Memory is bounded: at most perAddr credentials an address (the
// least recently successful one is forgotten first) and maxEntries in all (past that, an
// arbitrary address is forgotten: map order is random, so no caller can choose which). Nothing
// is remembered but a success, so a guesser cannot fill it.
type Known struct {
	perAddr, maxEntries int

	mu      sync.Mutex
	addrs   map[string][]string // address → credential keys, least recently successful first
	entries int
}

// Bounds of a Known made with zero bounds.
const (
	DefaultKnownPerAddr = 64
	DefaultKnownEntries = 100_000
)

// NewKnown returns an empty Known holding at most perAddr credentials per address and maxEntries
// in all (the defaults above for values <= 0).
func NewKnown(perAddr, maxEntries int) *Known {
	if perAddr <= 0 {
		perAddr = DefaultKnownPerAddr
	}
	if maxEntries <= 0 {
		maxEntries = DefaultKnownEntries
	}
	return &Known{perAddr: perAddr, maxEntries: max(maxEntries, perAddr), addrs: map[string][]string{}}
}

// Has tells whether credential has succeeded from addr, and is still remembered.
func (k *Known) Has(addr, credential string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.addrs[addr] {
		if c == credential {
			return true
		}
	}
	return false
}

// Remember records that credential has just succeeded from addr.
func (k *Known) Remember(addr, credential string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	creds, ok := k.addrs[addr]
	for i, c := range creds {
		if c == credential {
			if i != len(creds)-1 { // most recent last
				copy(creds[i:], creds[i+1:])
				creds[len(creds)-1] = credential
			}
			return
		}
	}
	if len(creds) >= k.perAddr {
		copy(creds, creds[1:])
		creds[len(creds)-1] = credential
		return
	}
	if k.entries >= k.maxEntries {
		k.forgetOne(addr)
		creds, ok = k.addrs[addr]
	}
	if !ok {
		creds = make([]string, 0, 1)
	}
	k.addrs[addr] = append(creds, credential)
	k.entries++
}

// forgetOne forgets every credential of an arbitrary address other than keep.
func (k *Known) forgetOne(keep string) {
	for a, creds := range k.addrs {
		if a != keep {
			k.entries -= len(creds)
			delete(k.addrs, a)
			return
		}
	}
	// keep is the only address: forget its oldest.
	creds := k.addrs[keep]
	k.addrs[keep] = creds[1:]
	k.entries--
}

// size is how many credentials are remembered in all.
func (k *Known) size() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.entries
}
