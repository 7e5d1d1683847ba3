package auditlog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"backoffice/internal/domain"
	"backoffice/internal/trail"
)

// ChainDigest is the digest of the trail up to and including e, given the digest up to the event
// before it (nil before the first). Unlike a link it needs no key: an auditor with an export
// recomputes it, and a signed checkpoint or an anchor that names it fixes every event up to e,
// links and key ids included. It is SHA-256 over the message of chainMessage's encoding:
//
//	field("backoffice audit digest v1"), field(previous digest), seq (8 bytes), field(chainKeyId),
//	field(id), at (8 bytes, microseconds), field(actorUserId), field(action), field(targetId),
//	field(outcome), field(detail), field(hash as bytes)
//
// where field(x) is x's length (4 bytes) then x, numbers big-endian, an unlinked event's key id
// and hash empty. docs/compliance.md documents it for verifiers outside this code.
func ChainDigest(prev []byte, e domain.AuditEvent) ([]byte, error) {
	link, err := hex.DecodeString(e.Hash)
	if err != nil {
		return nil, fmt.Errorf("store: audit event seq %d: hash is not hex", e.Seq)
	}
	b := trail.AppendEvent(make([]byte, 0, 320+len(e.Detail)), "backoffice audit digest v1", prev, e)
	b = trail.AppendField(b, link)
	sum := sha256.Sum256(b)
	return sum[:], nil
}

// ActionAnchor is the event that fixes the trail up to an earlier event under the active
// key: `keys rewrap` writes one, so that the links made under the key being retired stay proven
// once it leaves the ring (see anchorDetail).
const ActionAnchor = "audit.anchor"

// anchorDetail is an anchor's detail: the events it fixes (1 to seq) and their digest.
func anchorDetail(seq int64, digest []byte) string {
	return fmt.Sprintf("events 1 to %d: digest %s", seq, hex.EncodeToString(digest))
}

// parseAnchor reads an anchor's detail; ok is false when it is not one.
func parseAnchor(detail string) (seq int64, digest []byte, ok bool) {
	var digestHex string
	if n, err := fmt.Sscanf(detail, "events 1 to %d: digest %s", &seq, &digestHex); n != 2 || err != nil || seq < 1 {
		return 0, nil, false
	}
	if len(digestHex) != 2*sha256.Size || strings.ToLower(digestHex) != digestHex {
		return 0, nil, false
	}
	digest, err := hex.DecodeString(digestHex)
	return seq, digest, err == nil
}

// AnchorAudit fixes the trail as v proved it under the active key: it records an anchor event
// (e, with the anchor's action, target and detail) naming v's newest event and the digest up to
// it. Links made under an older key then stay proven once that key leaves the ring: a verify
// without it checks their digest against the anchor's, whose link it can check. `keys rewrap`
// anchors, after it verified the whole chain. An empty trail needs no anchor.
func (s *Log) AnchorAudit(ctx context.Context, v Verified, e domain.AuditEvent) error {
	if err := v.Err(); err != nil {
		return err
	}
	if v.seq == 0 {
		return nil
	}
	e.Action, e.TargetID, e.Detail = ActionAnchor, "audit_events", anchorDetail(v.seq, v.digest)
	return s.RecordAudit(ctx, e)
}
