package auditlog

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"sync"

	"golang.org/x/mod/sumdb/tlog"

	"backoffice/internal/domain"
)

// maxRemembered bounds the events a CommitMemory holds whose digest it cannot work out yet
// (see CommitMemory): past it, it stops remembering.
const maxRemembered = 1 << 19

// CommitMemory is what the checkpoint signer knows first-hand of the trail: every append this
// process committed and answered for (RecordAudit's groups, and the events a transaction records
// in its own body: credentials, documents), as a run: the head it appended after with the audit
// tree's root there (of the right edge it grew the run from), the head it ended at, and the
// tree's right edge there. The appender linked, hashed and read back each run in its own
// transaction; what it did not check is that the edge it grew from is the tree the signer
// verified, so a run carries the signer's head on only from a head with the same link and the same
// root (commitPoint.same): the signer carries its verified head over the runs that follow it, one
// after another, without reading them again (Follower.Next), and signing costs the same whatever
// was written since the last checkpoint; the checkpoint signs the trail as this process wrote it.
// The signer reads the trail only where other processes appended (another replica, a command),
// and checks there that every run it meets is what this process committed.
//
// A run committed over a head lower than the end of one committed before it means events this
// process answered for were removed and the gap closed by a later append: a break naming the
// first such seq, found as the run settles, and never signed over. An end this process committed
// that a walk of the trail does not reach is a deleted tail, also a break.
//
// A run's end carries the trail's digest there (ChainDigest), which the checkpoint names beside
// its tree. It is worked out from the digest at the run's start: the end of the run before it, or
// the head the signer verified last (learn). Until it can be (before the signer's first walk;
// after another process appended), the run keeps its events, at most maxRemembered of them; past
// that (the signer's walks failed for that long: the database was away, say) it stops
// remembering (so too past maxRemembered runs: the signer failed to move on for that long), and
// the next walk breaks, naming the first seq it did not keep: what it cannot
// vouch for is not signed by this process again (a restart walks on from the last checkpoint,
// with a new memory).
//
// It is kept only while a signer follows the trail (Log.RememberCommits).
type CommitMemory struct {
	mu sync.Mutex
	// runs are in the order of their ends (seq).
	runs    []*commitRun
	commits uint64
	// base is the newest head a walk of the trail verified, once known (the empty trail's has
	// seq 0 and no digest).
	base      commitPoint
	baseKnown bool
	// overlap is the first run committed over another's events (nil while none): kept.
	overlap *ChainBreak
	// lost is the first seq not kept, once limit was reached (0 while none was lost); held
	// counts the events kept for want of their digest.
	lost    int64
	held    int
	limit   int // maxRemembered; less in a test
	stopped bool
}

// commitPoint is a head of the chain: the newest event's seq, id and link, the audit tree's root
// at it (rooted: known), and the trail's digest up to it (nil while not known).
type commitPoint struct {
	seq    int64
	id     domain.ID
	link   []byte
	root   tlog.Hash
	rooted bool
	digest []byte
}

// same: p and q are the same head: the same seq and link, and the same tree under it. A run
// appended this process read the tree's right edge it grew from out of the database (or from its
// last commit): one that is not the tree the signer verified there (a row altered in between)
// makes a head another than the verified one, and the run is not carried over, but walked.
func (p commitPoint) same(q commitPoint) bool {
	return p.seq == q.seq && bytes.Equal(p.link, q.link) && p.rooted && q.rooted && p.root == q.root
}

// treeRoot is the root of the tree of n leaves whose right edge is edge; ok false when the edge
// lacks a hash it needs.
func treeRoot(n int64, edge edgeHashes) (root tlog.Hash, ok bool) {
	root, err := tlog.TreeHash(n, mapReader(edge))
	return root, err == nil
}

// commitRun is one append: from the head it was linked after to the one it ended at.
type commitRun struct {
	from, to commitPoint
	// edge is the audit tree's right edge at to.seq, dropped once a later run carries on from it.
	edge edgeHashes
	// events are the run's events as written, kept until to.digest is worked out.
	events []domain.AuditEvent
	// at is the commits counter when it committed (0 while its commit is pending).
	at uint64
}

// newCommitRun is the run of written, linked after from up to to, grown from the tree's right
// edge at from and ending with the edge at to.
func newCommitRun(from chainTip, written []domain.AuditEvent, to chainTip) commitRun {
	last := written[len(written)-1]
	r := commitRun{from: commitPoint{seq: from.seq, link: from.hash},
		to: commitPoint{seq: to.seq, id: last.ID, link: to.hash}, edge: to.edge, events: written}
	r.from.root, r.from.rooted = treeRoot(from.seq, from.edge)
	r.to.root, r.to.rooted = treeRoot(to.seq, to.edge)
	return r
}

// rememberRun tells each memory of ms of r, about to be sent, and returns what tells them whether
// it committed (and is about to be answered as such) or not (forgotten: a caller told of a
// failure was promised nothing).
func rememberRun(ms []*CommitMemory, r commitRun) (settle func(committed bool)) {
	runs := make([]*commitRun, len(ms))
	for i, m := range ms {
		c := r
		runs[i] = &c
		m.expect(runs[i])
	}
	return func(committed bool) {
		for i, m := range ms {
			m.settle(runs[i], committed)
		}
	}
}

// commitMemories are the memories the audit writer tells (one per signer following the trail).
type commitMemories struct {
	mu   sync.Mutex
	list []*CommitMemory
}

// RememberCommits starts remembering every audit event this store commits, for a walk of
// the chain to check (FollowAuditChain). Call it before the events the walk is to vouch for are
// written: serve does when it starts its checkpoint signer.
func (s *Log) RememberCommits() *CommitMemory {
	m := &CommitMemory{limit: maxRemembered}
	s.memories.mu.Lock()
	defer s.memories.mu.Unlock()
	s.memories.list = append(s.memories.list, m)
	return m
}

// active are the memories that still remember (nil when none: the writer then tells nobody).
func (ms *commitMemories) active() []*CommitMemory {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if len(ms.list) == 0 {
		return nil
	}
	return append([]*CommitMemory(nil), ms.list...)
}

// stop ends m's remembering.
func (ms *commitMemories) stop(m *CommitMemory) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for i, x := range ms.list {
		if x == m {
			ms.list = append(ms.list[:i], ms.list[i+1:]...)
			break
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopped, m.runs = true, nil
}

// expect notes a run about to be sent: pending until settled.
func (m *CommitMemory) expect(r *commitRun) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped || m.lost != 0 {
		return
	}
	if m.held+len(r.events) > m.limit || len(m.runs) >= m.limit {
		m.lost = r.from.seq + 1
		return
	}
	m.held += len(r.events)
	// Kept in the order of their ends: a one-statement append is told before its head is checked,
	// and one linked after a head that moved meanwhile ends below the run that moved it.
	i := len(m.runs)
	for i > 0 && m.runs[i-1].to.seq > r.to.seq {
		i--
	}
	m.runs = slices.Insert(m.runs, i, r)
}

// settle tells what became of a run expect was told of.
func (m *CommitMemory) settle(r *commitRun, committed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	i := m.index(r)
	if i < 0 {
		return // not kept: past the limit, or checked by a walk already
	}
	if !committed {
		m.held -= len(r.events)
		m.runs = append(m.runs[:i], m.runs[i+1:]...)
		return
	}
	m.commits++
	r.at = m.commits
	m.checkOverlap(i)
	m.resolveFrom(i)
}

// index is where r is in the runs (-1: not there); the runs settle close to the end.
func (m *CommitMemory) index(r *commitRun) int {
	for i := len(m.runs) - 1; i >= 0; i-- {
		if m.runs[i] == r {
			return i
		}
	}
	return -1
}

// checkOverlap notes a break when the run at i, just committed, and the committed runs next to
// it hold events at the same seq: each appends after the head it reads, so a run that starts
// below where one before it ended was linked over events this process answered for, which were
// removed.
func (m *CommitMemory) checkOverlap(i int) {
	r := m.runs[i]
	for j := i - 1; j >= 0; j-- {
		if p := m.runs[j]; p.at != 0 {
			m.overlaps(p, r)
			break
		}
	}
	for j := i + 1; j < len(m.runs); j++ {
		if s := m.runs[j]; s.at != 0 {
			m.overlaps(r, s)
			break
		}
	}
}

// overlaps notes a break when the earlier run p and the later run r hold events at the same seq.
func (m *CommitMemory) overlaps(p, r *commitRun) {
	if m.overlap != nil || p.to.seq <= r.from.seq || r.to.seq <= p.from.seq {
		return
	}
	m.overlap = &ChainBreak{Seq: max(p.from.seq, r.from.seq) + 1,
		Reason: "this process committed another audit event at this seq and answered for it: it was removed and the gap closed by a later append"}
}

// resolveFrom works out the digests of the committed runs from i on that carry on from a head
// whose digest is known, one after another.
func (m *CommitMemory) resolveFrom(i int) {
	for ; i < len(m.runs); i++ {
		r := m.runs[i]
		if r.at == 0 {
			return
		}
		if r.to.digest != nil {
			continue
		}
		if !m.resolve(i) {
			return
		}
	}
}

// resolve works out the digest at the end of the run at i from the one at its start: the base's,
// or the end of the committed run before it. False when neither is known.
func (m *CommitMemory) resolve(i int) bool {
	r := m.runs[i]
	var before *commitRun
	digest := []byte(nil)
	switch {
	case m.baseKnown && m.base.same(r.from):
		digest = m.base.digest
	case i > 0 && m.runs[i-1].at != 0 && m.runs[i-1].to.digest != nil && m.runs[i-1].to.same(r.from):
		before = m.runs[i-1]
		digest = before.to.digest
	default:
		return false
	}
	r.from.digest = digest
	for _, e := range r.events {
		d, err := ChainDigest(digest, e)
		if err != nil {
			return false // no event this writer links has another hash
		}
		digest = d
	}
	r.to.digest = digest
	m.held -= len(r.events)
	r.events = nil
	if before != nil {
		before.edge = nil // a head the signer passes over: only the newest run's edge is signed
	}
	return true
}

// carryOn is how far the committed runs carry on from p, one after another, their digests
// worked out: one run from p to the end of the last of them (with the tree's edge there), or nil
// when none carries on from p (yet). It fails with the break an overlap showed.
func (m *CommitMemory) carryOn(p commitPoint) (*commitRun, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.overlap != nil {
		return nil, m.overlap
	}
	var first, last *commitRun
	at := p
	for _, r := range m.runs {
		if r.from.seq < at.seq && first == nil {
			continue // passed: forgotten by passed or the next walk
		}
		if r.at == 0 || r.to.digest == nil || !r.from.same(at) || !bytes.Equal(r.from.digest, at.digest) {
			break
		}
		if first == nil {
			first = r
		}
		if r.edge != nil {
			last = r
		}
		at = r.to
	}
	if last == nil {
		return nil, nil
	}
	return &commitRun{from: first.from, to: last.to, edge: last.edge}, nil
}

// awaits: a run of this process that carries on from p is still being committed, or about to be
// carried on from p once its digest is worked out: a walk now would only meet its rows.
func (m *CommitMemory) awaits(p commitPoint) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.runs {
		if r.from.same(p) {
			return r.at == 0
		}
	}
	return false
}

// memoryCheck is what a walk makes of a row at seq with link hash against the memory.
type memoryCheck int

const (
	notRemembered      memoryCheck = iota
	asCommitted                    // committed, with this link
	otherThanCommitted             // committed with another link: a break
	pendingCommit                  // its commit is still being answered: look again after the walk
)

// check tells whether the row at seq with link hash (hex) is what this process committed there,
// where a run of its ended: the runs' ends and the links before them, checked by the walk, vouch
// for the events between.
func (m *CommitMemory) check(seq int64, hash string) memoryCheck {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := sort.Search(len(m.runs), func(i int) bool { return m.runs[i].to.seq >= seq })
	if i == len(m.runs) || m.runs[i].to.seq != seq {
		return notRemembered
	}
	r := m.runs[i]
	switch {
	case r.at == 0:
		return pendingCommit
	case hexHash(r.to.link) != hash:
		return otherThanCommitted
	}
	return asCommitted
}

// committedNow is the commits counter: runs settled as committed by now have at <= it.
func (m *CommitMemory) committedNow() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.commits
}

// missing is the lowest seq above walked of an event committed by the time the counter read
// before (committedNow), which a walk that began after it should have met; 0 when there is none.
// Past maxRemembered it is the first seq not kept; an overlap is its first seq.
func (m *CommitMemory) missing(walked int64, before uint64) (seq int64, why string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.overlap != nil {
		return m.overlap.Seq, m.overlap.Reason
	}
	for _, r := range m.runs {
		if r.to.seq > walked && r.at != 0 && r.at <= before {
			s := max(r.from.seq, walked) + 1
			if seq == 0 || s < seq {
				seq = s
			}
		}
	}
	if seq != 0 {
		return seq, "this process committed an audit event at this seq and answered for it, and the trail ends before it: it was deleted"
	}
	if m.lost != 0 {
		return m.lost, fmt.Sprintf("this process committed more than %d audit events the signer could not yet carry its check over, and remembers none from here on: it cannot vouch for them, so signs nothing more (restart serve to walk on from the last checkpoint)", m.limit)
	}
	return 0, ""
}

// learn takes p, a head a walk verified (its digest known), as where the runs carry on from:
// the runs up to it, which the walk checked, are forgotten, and the digests of those after it
// are worked out.
func (m *CommitMemory) learn(p commitPoint) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.base, m.baseKnown = p, true
	m.forgetUpTo(p.seq)
	m.resolveFrom(0)
}

// passed forgets the runs a signer carried its check over, up to the head p (now the base).
func (m *CommitMemory) passed(p commitPoint) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.base, m.baseKnown = p, true
	m.forgetUpTo(p.seq)
}

// forgetUpTo drops the committed runs that end at or below seq.
func (m *CommitMemory) forgetUpTo(seq int64) {
	kept := m.runs[:0]
	for _, r := range m.runs {
		if r.at != 0 && r.to.seq <= seq {
			m.held -= len(r.events)
			continue
		}
		kept = append(kept, r)
	}
	clear(m.runs[len(kept):])
	m.runs = kept
}
