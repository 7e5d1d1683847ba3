package secrets

import "backoffice/internal/domain"

// The SSN sealing rule, used by every path that seals or opens one (decrypt, import, export,
// rewrap): AES-256-GCM under the ring's active key, bound to the principal and the field as
// associated data, so that a ciphertext copied to another principal or field does not open.

// Sealer seals under the active key; *Ring is one.
type Sealer interface {
	Seal(plaintext, aad []byte) (keyID string, sealed []byte)
}

// Opener opens a value under the key it names; *Ring is one.
type Opener interface {
	Open(keyID string, sealed, aad []byte) ([]byte, error)
}

// SealSSN seals a principal's SSN under the active key.
func SealSSN(r Sealer, principal domain.ID, ssn string) (keyID string, sealed []byte) {
	return r.Seal([]byte(ssn), ssnAAD(principal))
}

// OpenSSN opens a principal's sealed SSN.
func OpenSSN(r Opener, principal domain.ID, keyID string, sealed []byte) (domain.SSN, error) {
	plain, err := r.Open(keyID, sealed, ssnAAD(principal))
	if err != nil {
		return domain.SSN{}, err
	}
	return domain.NewSSN(string(plain)), nil
}

func ssnAAD(principal domain.ID) []byte { return PrincipalAAD(string(principal), "ssn") }
