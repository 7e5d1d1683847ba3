// Package trail holds what the audit trail is, apart from where it is stored: the bytes an event
// is encoded to, and the leaves of the trail's Merkle tree (RFC 6962, as golang.org/x/mod's
// sumdb/tlog computes it). The formats are documented in docs/compliance.md for auditors who
// check them with their own tools.
package trail

import (
	"crypto/sha256"
	"encoding/binary"

	"backoffice/internal/column"
	"backoffice/internal/domain"
	"golang.org/x/mod/sumdb/tlog"
)

// TagSize is the length of a leaf's subject tag; LeafSize the length of a leaf.
const (
	TagSize  = sha256.Size
	LeafSize = TagSize + sha256.Size
)

// EventLabel opens the bytes of an event that its leaf hashes (EventHash).
const EventLabel = "backoffice audit leaf event v1"

// AppendEvent appends label, prev and every stored field of e but its link, each
// length-prefixed (numbers as fixed 8 bytes), so that no two different events encode alike. The
// chain's links, the digests and the leaves all encode events this one way, each after a label
// of its own.
func AppendEvent(b []byte, label string, prev []byte, e domain.AuditEvent) []byte {
	b = AppendText(b, label)
	b = AppendField(b, prev)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Seq))
	for _, f := range []string{e.ChainKeyID, string(e.ID)} {
		b = AppendText(b, f)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(column.Micros(e.At)))
	for _, f := range []string{string(e.ActorUserID), e.Action, e.TargetID, e.Outcome, e.Detail} {
		b = AppendText(b, f)
	}
	return b
}

// AppendField appends f after its length (4 bytes, big-endian).
func AppendField(b, f []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
	return append(b, f...)
}

// AppendText appends f after its length (4 bytes, big-endian).
func AppendText(b []byte, f string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
	return append(b, f...)
}

// EventHash is the SHA-256 of the event's bytes after EventLabel (and an empty prev): what a leaf
// holds of the event, so that the leaf discloses nothing of it, and the event, served beside its
// proof, is checked against it.
func EventHash(e domain.AuditEvent) [sha256.Size]byte {
	return sha256.Sum256(AppendEvent(make([]byte, 0, 256+len(e.Detail)), EventLabel, nil, e))
}

// Leaf is the tree's leaf of the event (its record, in tlog's words): the event's subject tag
// (the keyed tag of its target, secrets.Ring.SubjectTag under the key its link was made under;
// 32 zero bytes for an event written before the chain, which has no key) and its EventHash. The
// leaf's hash in the tree is tlog.RecordHash(Leaf(...)): SHA-256 of 0x00 and the leaf.
func Leaf(tag []byte, e domain.AuditEvent) []byte {
	b := make([]byte, 0, LeafSize)
	if len(tag) == TagSize {
		b = append(b, tag...)
	} else {
		b = append(b, make([]byte, TagSize)...)
	}
	h := EventHash(e)
	return append(b, h[:]...)
}

// Index is the leaf index of the event seq: the trail's events are the tree's leaves, in seq
// order from 1.
func Index(seq int64) int64 { return seq - 1 }

// LeafHash is the leaf's hash in the tree.
func LeafHash(leaf []byte) tlog.Hash { return tlog.RecordHash(leaf) }
