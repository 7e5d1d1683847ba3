package secrets

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"hash"
	"sync"
)

// auditChainLabel is the HKDF info that derives the audit chain's key from a master key. The
// chain has a key of its own, never the one that seals SSNs; the "v1" names the derivation, so a
// later one can live beside it.
const auditChainLabel = "backoffice audit chain v1"

// deriveChainKey is HKDF-SHA-256(master key, no salt, auditChainLabel), 32 bytes.
func deriveChainKey(master []byte) ([]byte, error) {
	return hkdf.Key(sha256.New, master, nil, auditChainLabel, sha256.Size)
}

// ChainMAC is HMAC-SHA-256 of message under the audit chain key derived from the master key
// keyID. Every key of the ring answers, so links made before a rotation stay verifiable while
// their key is in the ring.
func (r *Ring) ChainMAC(keyID string, message []byte) ([]byte, error) {
	key, ok := r.chain[keyID]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKey, keyID)
	}
	return key.mac(message), nil
}

// macKey is a derived key with HMAC-SHA-256s keyed by it to reuse: every audit event is linked
// under the chain's key and tagged under the subjects' when written, and a reset HMAC starts from
// its keyed state where a new one derives it anew (BenchmarkMACKey: several times faster).
type macKey struct {
	macs sync.Pool
}

func newMACKey(key []byte) *macKey {
	return &macKey{macs: sync.Pool{New: func() any { return hmac.New(sha256.New, key) }}}
}

// mac is HMAC-SHA-256 of message under k.
func (k *macKey) mac(message []byte) []byte {
	m := k.macs.Get().(hash.Hash)
	defer k.macs.Put(m)
	m.Reset()
	m.Write(message)
	return m.Sum(nil)
}

func newChainKey(master []byte) (*macKey, error) {
	key, err := deriveChainKey(master)
	if err != nil {
		return nil, err
	}
	return newMACKey(key), nil
}
