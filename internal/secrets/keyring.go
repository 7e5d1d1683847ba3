// Package secrets seals sensitive values at rest (AES-256-GCM under a master key ring) and hashes
// credentials. Nothing here logs, and no error it returns carries plaintext.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of a master key: AES-256.
const KeySize = 32

// ErrUnknownKey means a ciphertext names a key id the ring does not hold.
var ErrUnknownKey = errors.New("secrets: ciphertext key id is not in the key ring")

// ErrOpen means authentication of a ciphertext failed: wrong key, tampered data, or data bound
// to another record.
var ErrOpen = errors.New("secrets: ciphertext does not authenticate")

// Ring holds the master keys. The first key seals; every key opens, so that values sealed under
// an older key stay readable until they are re-wrapped.
type Ring struct {
	active string
	aeads  map[string]cipher.AEAD
	order  []string
	// chain holds each master key's audit chain key (see ChainMAC).
	chain map[string]*macKey
	// signing holds each master key's audit checkpoint key (see CheckpointKey).
	signing map[string]ed25519.PrivateKey
	// subjects holds each master key's subject tag key (see SubjectTag).
	subjects map[string]*macKey
}

// Key is one entry of a ring.
type Key struct {
	ID    string
	Bytes []byte
}

// NewRing builds a ring; keys[0] is the active key.
func NewRing(keys ...Key) (*Ring, error) {
	if len(keys) == 0 {
		return nil, errors.New("secrets: a key ring needs at least one key")
	}
	r := &Ring{active: keys[0].ID, aeads: make(map[string]cipher.AEAD, len(keys)), chain: make(map[string]*macKey, len(keys)),
		signing: make(map[string]ed25519.PrivateKey, len(keys)), subjects: make(map[string]*macKey, len(keys))}
	for _, k := range keys {
		if len(k.Bytes) != KeySize {
			return nil, fmt.Errorf("secrets: key %q is %d bytes, want %d", k.ID, len(k.Bytes), KeySize)
		}
		if _, dup := r.aeads[k.ID]; dup {
			return nil, fmt.Errorf("secrets: key id %q appears twice", k.ID)
		}
		block, err := aes.NewCipher(k.Bytes)
		if err != nil {
			return nil, fmt.Errorf("secrets: key %q: %w", k.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("secrets: key %q: %w", k.ID, err)
		}
		r.aeads[k.ID] = aead
		if r.chain[k.ID], err = newChainKey(k.Bytes); err != nil {
			return nil, fmt.Errorf("secrets: key %q: %w", k.ID, err)
		}
		if r.signing[k.ID], err = deriveCheckpointKey(k.Bytes); err != nil {
			return nil, fmt.Errorf("secrets: key %q: %w", k.ID, err)
		}
		subject, err := deriveSubjectKey(k.Bytes)
		if err != nil {
			return nil, fmt.Errorf("secrets: key %q: %w", k.ID, err)
		}
		r.subjects[k.ID] = newMACKey(subject)
		r.order = append(r.order, k.ID)
	}
	return r, nil
}

// ParseMasterKey reads the base64 of 32 bytes given as BACKOFFICE_MASTER_KEY and names it by a
// fingerprint, so the same key always gets the same id.
func ParseMasterKey(b64 string) (Key, error) {
	raw, err := decodeKey(b64)
	if err != nil {
		return Key{}, fmt.Errorf("master key %w", err)
	}
	return Key{ID: Fingerprint(raw), Bytes: raw}, nil
}

// MakeKeyHint is how to make a master key, as every message about a bad one says.
const MakeKeyHint = "head -c 32 /dev/urandom | base64"

// decodeKey reads a master key: base64 of KeySize bytes. Its error continues "master key …" or
// "key ID …" and says what was wrong and how to make a good one; a key written as hex, the other
// form keys come in, is named as such.
func decodeKey(b64 string) ([]byte, error) {
	s := strings.TrimSpace(b64)
	want := fmt.Sprintf("want base64 of %d random bytes (make one: %s)", KeySize, MakeKeyHint)
	if len(s) == 2*KeySize {
		if _, err := hex.DecodeString(s); err == nil {
			return nil, fmt.Errorf("looks like hex (%d hex digits); %s", len(s), want)
		}
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("is not valid base64; %s", want)
	}
	if len(raw) != KeySize {
		return nil, fmt.Errorf("decodes to %d bytes; %s", len(raw), want)
	}
	return raw, nil
}

// Fingerprint names a key without revealing it: the first 8 bytes of SHA-256 over a label and
// the key, in hex.
func Fingerprint(key []byte) string {
	sum := sha256.Sum256(append([]byte("backoffice key id\x00"), key...))
	return "k" + hex.EncodeToString(sum[:8])
}

// NewKey returns a fresh random master key as base64, as `backoffice` tells users to make one.
func NewKey() string {
	b := make([]byte, KeySize)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// ActiveKeyID names the key new values are sealed under.
func (r *Ring) ActiveKeyID() string { return r.active }

// KeyIDs lists the ring's key ids, active first.
func (r *Ring) KeyIDs() []string { return append([]string(nil), r.order...) }

// Seal encrypts plaintext under the active key, bound to aad. The result is nonce || ciphertext.
func (r *Ring) Seal(plaintext, aad []byte) (keyID string, sealed []byte) {
	aead := r.aeads[r.active]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	_, _ = rand.Read(nonce)
	return r.active, aead.Seal(nonce, nonce, plaintext, aad)
}

// Open decrypts what Seal produced under the named key.
func (r *Ring) Open(keyID string, sealed, aad []byte) ([]byte, error) {
	aead, ok := r.aeads[keyID]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKey, keyID)
	}
	if len(sealed) < aead.NonceSize() {
		return nil, ErrOpen
	}
	nonce, ct := sealed[:aead.NonceSize()], sealed[aead.NonceSize():]
	pt, err := aead.Open(nil, nonce, ct, aad)
	if err != nil {
		return nil, ErrOpen
	}
	return pt, nil
}

// PrincipalAAD binds a sealed value to its principal and field, so a ciphertext copied to another
// row or field fails to open.
func PrincipalAAD(principalID, field string) []byte {
	return []byte("principal:" + principalID + ":" + field)
}
