package secrets

import (
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
)

// subjectLabel is the HKDF info that derives, from a master key, the key of the audit trail's
// subject tags: a key of its own, like the chain's and the checkpoints'.
const subjectLabel = "backoffice audit subject v1"

// deriveSubjectKey is HKDF-SHA-256(master key, no salt, subjectLabel), 32 bytes.
func deriveSubjectKey(master []byte) ([]byte, error) {
	return hkdf.Key(sha256.New, master, nil, subjectLabel, sha256.Size)
}

// SubjectTag is HMAC-SHA-256 of subject (an audit event's target) under the subject tag key
// derived from the master key keyID. The tag stands in for the subject in the audit log's
// public leaves: without the key it tells nothing of whose event a leaf is, and an auditor given
// one subject's tag can pick that subject's leaves out of the log, and only those.
func (r *Ring) SubjectTag(keyID, subject string) ([]byte, error) {
	key, ok := r.subjects[keyID]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKey, keyID)
	}
	return key.mac([]byte(subject)), nil
}
