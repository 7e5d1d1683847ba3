package trail_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"testing"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/trail"
)

func event() domain.AuditEvent {
	return domain.AuditEvent{ID: "evt_1", At: time.Date(2026, 12, 2, 6, 0, 0, 123456000, time.UTC), ActorUserID: "usr_1",
		Action: "principal.decrypt", TargetID: "prn_1", Outcome: "granted", Detail: "ssn", Seq: 7, ChainKeyID: "k1"}
}

// TestLeafIsTheDocumentedBytes builds the leaf as docs/compliance.md describes it, by hand, and
// compares: an auditor's own code gets the same leaf.
func TestLeafIsTheDocumentedBytes(t *testing.T) {
	e := event()
	text := func(b []byte, s string) []byte {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		return append(b, s...)
	}
	var b []byte
	b = text(b, "backoffice audit leaf event v1")
	b = binary.BigEndian.AppendUint32(b, 0) // no prev
	b = binary.BigEndian.AppendUint64(b, 7)
	b = text(b, "k1")
	b = text(b, "evt_1")
	b = binary.BigEndian.AppendUint64(b, uint64(e.At.UnixMicro()))
	for _, f := range []string{"usr_1", "principal.decrypt", "prn_1", "granted", "ssn"} {
		b = text(b, f)
	}
	sum := sha256.Sum256(b)
	tag := bytes.Repeat([]byte{0xab}, trail.TagSize)
	want := append(append([]byte{}, tag...), sum[:]...)
	if got := trail.Leaf(tag, e); !bytes.Equal(got, want) {
		t.Fatalf("leaf\n got %x\nwant %x", got, want)
	}
	if got := trail.Leaf(nil, e); !bytes.Equal(got[:trail.TagSize], make([]byte, trail.TagSize)) || len(got) != trail.LeafSize {
		t.Fatalf("an event without a key has a zero tag: %x", got)
	}
}

// TestEveryFieldChangesTheLeaf: no field of the event is left out of its leaf.
func TestEveryFieldChangesTheLeaf(t *testing.T) {
	base := trail.Leaf(nil, event())
	changes := map[string]func(*domain.AuditEvent){
		"id":      func(e *domain.AuditEvent) { e.ID = "evt_2" },
		"at":      func(e *domain.AuditEvent) { e.At = e.At.Add(time.Microsecond) },
		"actor":   func(e *domain.AuditEvent) { e.ActorUserID = "usr_2" },
		"action":  func(e *domain.AuditEvent) { e.Action = "principal.read" },
		"target":  func(e *domain.AuditEvent) { e.TargetID = "prn_2" },
		"outcome": func(e *domain.AuditEvent) { e.Outcome = "denied" },
		"detail":  func(e *domain.AuditEvent) { e.Detail = "ssn " },
		"seq":     func(e *domain.AuditEvent) { e.Seq = 8 },
		"key":     func(e *domain.AuditEvent) { e.ChainKeyID = "k2" },
		// Lengths are prefixed: moving a byte from one field to the next is a change too.
		"boundary": func(e *domain.AuditEvent) { e.Outcome, e.Detail = "grantedss", "n" },
	}
	for name, change := range changes {
		e := event()
		change(&e)
		if bytes.Equal(trail.Leaf(nil, e), base) {
			t.Errorf("changing the %s leaves the leaf as it was", name)
		}
	}
}
