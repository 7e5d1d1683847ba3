package auditlog

import (
	"bytes"
	"testing"
)

// A one-statement append is told to the memory before its head is checked, so a run linked
// after a head that moved meanwhile can be told after the run that moved it, and end below it.
// The memory keeps its runs in the order of their ends all the same: a walk that meets the end of
// the committed run with another link is told so (otherThanCommitted), not that the memory holds
// nothing there.
func TestCommitMemoryFindsARunEndBeyondOneToldLater(t *testing.T) {
	m := &CommitMemory{limit: maxRemembered}
	link := func(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }
	moved := &commitRun{from: commitPoint{seq: 10, link: link(1)}, to: commitPoint{seq: 12, link: link(2)}}
	stale := &commitRun{from: commitPoint{seq: 10, link: link(1)}, to: commitPoint{seq: 11, link: link(3)}}
	m.expect(moved)
	m.settle(moved, true)
	m.expect(stale) // pending: its statement will find the head moved
	if got := m.check(12, hexHash(link(4))); got != otherThanCommitted {
		t.Fatalf("the end of the committed run, with another link: %v, want otherThanCommitted", got)
	}
	if got := m.check(12, hexHash(link(2))); got != asCommitted {
		t.Fatalf("the end of the committed run, as written: %v, want asCommitted", got)
	}
	if got := m.check(11, hexHash(link(3))); got != pendingCommit {
		t.Fatalf("the end of the pending run: %v, want pendingCommit", got)
	}
}

// Runs whose digests are worked out hold no events, and are kept all the same until the signer
// moves on: past limit runs (a signer that fails before it moves on, tick after tick), the memory
// stops remembering, and names the first seq it did not keep.
func TestCommitMemoryBoundsItsRuns(t *testing.T) {
	m := &CommitMemory{limit: 2}
	m.learn(commitPoint{rooted: true})
	var from commitPoint
	from.rooted = true
	for seq := int64(1); seq <= 3; seq++ {
		to := commitPoint{seq: seq, link: bytes.Repeat([]byte{byte(seq)}, 32), rooted: true}
		r := &commitRun{from: from, to: to}
		m.expect(r)
		m.settle(r, true)
		from = to
	}
	if seq, why := m.missing(3, m.committedNow()); seq != 3 || why == "" {
		t.Fatalf("missing: %d %q; want seq 3, not kept", seq, why)
	}
}
