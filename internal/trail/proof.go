package trail

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/formats/proof"
	"golang.org/x/mod/sumdb/tlog"

	"backoffice/internal/domain"
)

// Tree is what proving an event reads of the trail's Merkle tree.
type Tree interface {
	AuditHashReader(ctx context.Context) tlog.HashReader
	AuditLeaves(ctx context.Context, start, end int64) ([][]byte, error)
	AuditEventAt(ctx context.Context, index int64) (domain.AuditEvent, error)
}

// EventProof is an event beside its c2sp.org/tlog-proof@v1: the proof's extra data is the
// leaf's subject tag, so that the leaf is recomputed from the event (Leaf(tag, event)), and its
// checkpoint is the signed note it is proved against.
type EventProof struct {
	Event domain.AuditEvent `json:"event"`
	Proof string            `json:"proof"`
}

// ErrNotCovered: the checkpoint is older than the event; a later one will cover it.
var ErrNotCovered = errors.New("no signed checkpoint covers the event yet")

// Indexed is a Tree that finds an event's leaf by the event's id (domain.ErrNotFound when none).
type Indexed interface {
	Tree
	AuditEventIndex(ctx context.Context, id domain.ID) (domain.AuditEvent, int64, error)
}

// ProveID builds the proof of the event id against the signed checkpoint note (Prove), and
// refuses one whose leaf turns out to be another event's.
func ProveID(ctx context.Context, tree Indexed, id domain.ID, note []byte) (EventProof, error) {
	_, index, err := tree.AuditEventIndex(ctx, id)
	if err != nil {
		return EventProof{}, err
	}
	p, err := Prove(ctx, tree, index, note)
	if err == nil && p.Event.ID != id {
		return p, fmt.Errorf("event %s: the tree's leaf %d is event %s", id, index, p.Event.ID)
	}
	return p, err
}

// Prove builds the proof of the event at index against the signed checkpoint note. It reads back
// what it serves: the event must be the one its stored leaf hashes, and the inclusion proof must
// check against the checkpoint's root, or it refuses (the tree and the checkpoint disagree).
func Prove(ctx context.Context, tree Tree, index int64, note []byte) (EventProof, error) {
	p, _, err := prove(ctx, tree, index, note)
	return p, err
}

// prove is Prove, returning the proved leaf too.
func prove(ctx context.Context, tree Tree, index int64, note []byte) (EventProof, []byte, error) {
	cp, err := CheckpointOf(note)
	if err != nil {
		return EventProof{}, nil, err
	}
	size := int64(cp.Size)
	if size < 0 {
		return EventProof{}, nil, fmt.Errorf("the checkpoint's tree size %d is out of range", cp.Size)
	}
	if index >= size {
		return EventProof{}, nil, fmt.Errorf("%w: the event is leaf %d, the newest checkpoint's tree has %d", ErrNotCovered, index, cp.Size)
	}
	e, err := tree.AuditEventAt(ctx, index)
	if err != nil {
		return EventProof{}, nil, err
	}
	leaves, err := tree.AuditLeaves(ctx, index, index+1)
	if err != nil {
		return EventProof{}, nil, err
	}
	if len(leaves) != 1 || len(leaves[0]) != LeafSize || !bytes.Equal(leaves[0], Leaf(leaves[0][:TagSize], e)) {
		return EventProof{}, nil, fmt.Errorf("leaf %d: the stored leaf is not the event's", index)
	}
	leaf := leaves[0]
	p, err := tlog.ProveRecord(size, index, tree.AuditHashReader(ctx))
	if err != nil {
		return EventProof{}, nil, fmt.Errorf("leaf %d: inclusion proof in the tree of %d: %w", index, size, err)
	}
	var root tlog.Hash
	copy(root[:], cp.Hash)
	if len(cp.Hash) != len(root) || tlog.CheckRecord(p, size, root, index, LeafHash(leaf)) != nil {
		return EventProof{}, nil, fmt.Errorf("leaf %d: the tree does not prove it under the checkpoint of %d", index, size)
	}
	tp := proof.TLogProof{Index: uint64(index), Checkpoint: note, ExtraData: leaf[:TagSize]}
	for _, h := range p {
		tp.Hashes = append(tp.Hashes, h)
	}
	return EventProof{Event: e, Proof: string(tp.Marshal())}, leaf, nil
}

// CheckpointOf reads a signed checkpoint note's body (c2sp.org/tlog-checkpoint): origin, size and
// root. It checks no signature: Prove serves the note for the auditor to check with the log's key.
func CheckpointOf(note []byte) (log.Checkpoint, error) {
	body, _, ok := bytes.Cut(note, []byte("\n\n"))
	var cp log.Checkpoint
	if !ok {
		return cp, errors.New("the checkpoint is not a signed note (no blank line before its signatures)")
	}
	if _, err := cp.Unmarshal(append(bytes.Clone(body), '\n')); err != nil {
		return cp, err
	}
	return cp, nil
}
