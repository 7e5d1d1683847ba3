package trail

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"backoffice/internal/domain"
)

// Tagger makes subject tags (*secrets.Ring is one).
type Tagger interface {
	SubjectTag(keyID, subject string) ([]byte, error)
}

// SubjectTag is a subject's tag under one master key: the first half of the leaf of every event
// about the subject linked under that key.
type SubjectTag struct {
	KeyID string `json:"keyId"`
	Tag   []byte `json:"tag"`
}

// History is one subject's complete history against a signed checkpoint: the subject's tag
// under each key, and every event about it with its proof. An auditor given the file and the
// log's tiles checks that the leaves carrying one of these tags, in the checkpoint's tree, are
// exactly the leaves of these events (docs/compliance.md). The tags are revealed: they are the
// subject's pseudonyms in the log, and what the auditor looks for.
type History struct {
	TargetID   string       `json:"targetId"`
	Checkpoint string       `json:"checkpoint"`
	Tags       []SubjectTag `json:"tags"`
	Proofs     []EventProof `json:"proofs"`
}

// ProveHistory proves the events about subject (all of them, in seq order) against the signed
// checkpoint note, and names the subject's tag under each key of keyIDs and each key its events
// were linked under. It refuses an event about another subject, one the checkpoint does not
// cover, one whose stored tag is not the one tagger makes of its subject under its key, and an
// event linked under a key tagger does not hold (its tag cannot be named, so the history could
// not be checked whole).
func ProveHistory(ctx context.Context, tree Tree, tagger Tagger, keyIDs []string, subject string, events []domain.AuditEvent, note []byte) (History, error) {
	h := History{TargetID: subject, Checkpoint: string(note), Proofs: make([]EventProof, 0, len(events))}
	keys := slices.Clone(keyIDs)
	for _, e := range events {
		if keyed(e) {
			keys = append(keys, e.ChainKeyID)
		}
	}
	slices.Sort(keys)
	tags := make(map[string][]byte, len(keys))
	for _, k := range slices.Compact(keys) {
		t, err := tagger.SubjectTag(k, subject)
		if err != nil {
			return History{}, fmt.Errorf("the subject's tag under key %q: %w", k, err)
		}
		tags[k] = t
		h.Tags = append(h.Tags, SubjectTag{KeyID: k, Tag: t})
	}
	for _, e := range events {
		if e.TargetID != subject {
			return History{}, fmt.Errorf("audit event %s (seq %d) is about %s, not %s", e.ID, e.Seq, e.TargetID, subject)
		}
		if e.Seq < 1 {
			return History{}, fmt.Errorf("audit event %s has no seq: it is no leaf of the tree", e.ID)
		}
		p, leaf, err := prove(ctx, tree, Index(e.Seq), note)
		if err != nil {
			return History{}, fmt.Errorf("audit event %s (seq %d): %w", e.ID, e.Seq, err)
		}
		if p.Event.ID != e.ID {
			return History{}, fmt.Errorf("audit event %s (seq %d): the tree's leaf is event %s", e.ID, e.Seq, p.Event.ID)
		}
		want := make([]byte, TagSize)
		if keyed(e) {
			want = tags[e.ChainKeyID]
		}
		if !bytes.Equal(leaf[:TagSize], want) {
			return History{}, fmt.Errorf("audit event %s (seq %d): its leaf's subject tag is not the one its key %q makes of %s", e.ID, e.Seq, e.ChainKeyID, subject)
		}
		h.Proofs = append(h.Proofs, p)
	}
	return h, nil
}

// keyed reports whether e's leaf has a subject tag: it was linked under a key (an event from
// before the chain has no link and a zero tag).
func keyed(e domain.AuditEvent) bool { return e.ChainKeyID != "" && e.Hash != "" }
