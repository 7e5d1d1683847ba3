package trail_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"backoffice/internal/domain"
	"backoffice/internal/trail"
)

// tagger makes a tag of key and subject, for the keys it holds.
type tagger map[string]bool

func (tg tagger) SubjectTag(keyID, subject string) ([]byte, error) {
	if !tg[keyID] {
		return nil, errors.New("unknown key")
	}
	h := sha256.Sum256([]byte(keyID + "/" + subject))
	return h[:], nil
}

// eventTree is a tree of events whose leaves are stored with the tags given, as a writer that
// made a tag wrong would have stored them (the tree consistent with it).
type eventTree struct {
	events []domain.AuditEvent
	leaves [][]byte
	hashes []tlog.Hash
}

func newEventTree(t *testing.T, events []domain.AuditEvent, tags [][]byte) (*eventTree, []byte) {
	t.Helper()
	m := &eventTree{events: events}
	for i, e := range events {
		leaf := trail.Leaf(tags[i], e)
		hs, err := tlog.StoredHashes(int64(i), leaf, m.AuditHashReader(context.Background()))
		if err != nil {
			t.Fatal(err)
		}
		m.leaves = append(m.leaves, leaf)
		m.hashes = append(m.hashes, hs...)
	}
	root, err := tlog.TreeHash(int64(len(events)), m.AuditHashReader(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	note := fmt.Appendf(nil, "test/audit\n%d\n%s\n\n— test/audit AAAA\n", len(events), base64.StdEncoding.EncodeToString(root[:]))
	return m, note
}

func (m *eventTree) AuditHashReader(context.Context) tlog.HashReader {
	return tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = m.hashes[x]
		}
		return out, nil
	})
}

func (m *eventTree) AuditLeaves(_ context.Context, start, end int64) ([][]byte, error) {
	return m.leaves[start:end], nil
}

func (m *eventTree) AuditEventAt(_ context.Context, index int64) (domain.AuditEvent, error) {
	return m.events[index], nil
}

// historyEvents: seq 1 from before the chain about prn_1, seq 2 under k1 about prn_1, seq 3 under
// k1 about prn_2, seq 4 under k2 about prn_1; and their right tags.
func historyEvents(tg tagger) ([]domain.AuditEvent, [][]byte) {
	var events []domain.AuditEvent
	var tags [][]byte
	for i, ev := range []struct{ key, subject string }{{"", "prn_1"}, {"k1", "prn_1"}, {"k1", "prn_2"}, {"k2", "prn_1"}} {
		e := event()
		e.ID, e.Seq, e.ChainKeyID, e.TargetID = domain.ID(fmt.Sprintf("evt_%d", i+1)), int64(i+1), ev.key, ev.subject
		var tag []byte
		if ev.key != "" {
			e.Hash = "ab"
			tag, _ = tg.SubjectTag(ev.key, ev.subject)
		}
		events = append(events, e)
		tags = append(tags, tag)
	}
	return events, tags
}

// A subject's history names its tag under each key given and each its events were linked under,
// once each, and proves each event; its event from before the chain has the zero tag.
func TestProveHistory(t *testing.T) {
	tg := tagger{"k1": true, "k2": true, "k3": true}
	events, tags := historyEvents(tg)
	tree, note := newEventTree(t, events, tags)
	mine := []domain.AuditEvent{events[0], events[1], events[3]}
	h, err := trail.ProveHistory(context.Background(), tree, tg, []string{"k3", "k1"}, "prn_1", mine, note)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, tag := range h.Tags {
		want, _ := tg.SubjectTag(tag.KeyID, "prn_1")
		if !bytes.Equal(tag.Tag, want) {
			t.Errorf("tag under %s", tag.KeyID)
		}
		keys = append(keys, tag.KeyID)
	}
	if strings.Join(keys, ",") != "k1,k2,k3" || h.TargetID != "prn_1" || h.Checkpoint != string(note) || len(h.Proofs) != 3 || h.Proofs[2].Event.ID != "evt_4" {
		t.Fatalf("history: %+v", h)
	}
}

// It refuses an event about another subject, one whose stored tag is not its subject's under its
// key (the tree consistent with it, so that only the tag tells), a tag on an event from before the
// chain, an event under a key it cannot tag with, an event the checkpoint does not cover, and one
// with no seq (no leaf).
func TestProveHistoryRefuses(t *testing.T) {
	tg := tagger{"k1": true, "k2": true}
	events, tags := historyEvents(tg)
	for name, c := range map[string]struct {
		tags   func([][]byte)
		tagger tagger
		events []domain.AuditEvent
		size   int
		want   string
	}{
		"another subject's event": {events: events, want: "is about prn_2, not prn_1"},
		"a tag made wrong": {tags: func(tags [][]byte) { tags[3] = bytes.Repeat([]byte{1}, 32) }, events: []domain.AuditEvent{events[3]},
			want: `its leaf's subject tag is not the one its key "k2" makes of prn_1`},
		"another key's tag": {tags: func(tags [][]byte) { tags[3] = tags[1] }, events: []domain.AuditEvent{events[3]},
			want: `its leaf's subject tag is not the one its key "k2" makes of prn_1`},
		"a tag on an event from before the chain": {tags: func(tags [][]byte) { tags[0] = tags[1] }, events: []domain.AuditEvent{events[0]},
			want: `its leaf's subject tag is not the one its key "" makes of prn_1`},
		"a key not held": {tagger: tagger{"k1": true}, events: []domain.AuditEvent{events[3]}, want: `the subject's tag under key "k2"`},
		"not covered":    {events: []domain.AuditEvent{events[3]}, size: 3, want: "no signed checkpoint covers"},
		"no seq":         {events: []domain.AuditEvent{{ID: "evt_0", TargetID: "prn_1"}}, want: "has no seq"},
	} {
		t.Run(name, func(t *testing.T) {
			stored := append([][]byte(nil), tags...)
			if c.tags != nil {
				c.tags(stored)
			}
			n := len(events)
			if c.size > 0 {
				n = c.size
			}
			tree, note := newEventTree(t, events[:n], stored[:n])
			tree.events, tree.leaves = events, append(tree.leaves, make([][]byte, len(events)-n)...)
			use := tg
			if c.tagger != nil {
				use = c.tagger
			}
			if _, err := trail.ProveHistory(context.Background(), tree, use, nil, "prn_1", c.events, note); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
		})
	}
}
