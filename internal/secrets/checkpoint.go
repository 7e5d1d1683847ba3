package secrets

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
)

// checkpointLabel is the HKDF info that derives the audit checkpoints' Ed25519 seed from a
// master key: a key of its own, like the chain's (auditChainLabel), never the one that seals SSNs.
const checkpointLabel = "backoffice audit checkpoint v1"

// deriveCheckpointKey is the Ed25519 key whose seed is HKDF-SHA-256(master key, no salt,
// checkpointLabel), 32 bytes.
func deriveCheckpointKey(master []byte) (ed25519.PrivateKey, error) {
	seed, err := hkdf.Key(sha256.New, master, nil, checkpointLabel, ed25519.SeedSize)
	if err != nil {
		return nil, err
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// CheckpointKey is the private key that signs audit checkpoints under the master key keyID.
func (r *Ring) CheckpointKey(keyID string) (ed25519.PrivateKey, error) {
	key, ok := r.signing[keyID]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKey, keyID)
	}
	return key, nil
}

// CheckpointPublicKey is the public key that checks checkpoints signed under keyID: not a secret,
// it is what an auditor is given.
func (r *Ring) CheckpointPublicKey(keyID string) (ed25519.PublicKey, error) {
	key, err := r.CheckpointKey(keyID)
	if err != nil {
		return nil, err
	}
	return key.Public().(ed25519.PublicKey), nil
}
