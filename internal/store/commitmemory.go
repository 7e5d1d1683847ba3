package store

import (
	"encoding/hex"
	"fmt"
	"sync"

	"backoffice/internal/domain"
)

// maxRemembered bounds a CommitMemory: the events this process's audit writer may commit between
// two walks of the checkpoint signer before it stops remembering them (see CommitMemory).
const maxRemembered = 1 << 19

// CommitMemory is what the checkpoint signer knows first-hand of the trail: the seq and link of
// every event this process committed and answered for (RecordAudit's, and those a transaction
// records in its own body: credentials, documents), kept in memory from before its rows are sent until
// a walk of the chain (AuditFollower) has found each in the trail, as written. A walk that finds
// one of them missing or different, or that ends short of one committed before it began, is a
// break naming its seq: a row deleted after its decrypt answered, and a gap closed by a later
// append (which numbers its events after the head it reads, so the chain links over the gap) are
// never signed over. The database alone cannot tell such a trail from one never longer; this
// process can, for what it committed since its walk last checked.
//
// It is kept only while a signer follows the trail (Store.RememberCommits), and a walk forgets
// what it checked, so it holds the events of about one checkpoint interval. It never holds more
// than maxRemembered: past that (the signer's walks failed for that long: the database was away,
// say) it stops remembering, and the next walk breaks, naming the first seq it did not keep:
// what it cannot vouch for is not signed by this process again (a restart walks on from the last
// checkpoint, with a new memory). Other processes' events are not in it: the chain and the
// checkpoints are what prove those.
type CommitMemory struct {
	mu sync.Mutex
	// events are by seq: the link written, and when it was committed (the commits counter then; 0
	// while its commit is pending).
	events  map[int64]remembered
	commits uint64
	// lost is the first seq not kept, once limit was reached (0 while none was lost).
	lost    int64
	limit   int // maxRemembered; less in a test
	stopped bool
}

type remembered struct {
	hash [32]byte
	at   uint64
}

// commitMemories are the memories the audit writer tells (one per signer following the trail).
type commitMemories struct {
	mu   sync.Mutex
	list []*CommitMemory
}

// RememberCommits starts remembering every audit event this store commits, for a walk of
// the chain to check (FollowAuditChain). Call it before the events the walk is to vouch for are
// written: serve does when it starts its checkpoint signer.
func (s *Store) RememberCommits() *CommitMemory {
	m := &CommitMemory{events: map[int64]remembered{}, limit: maxRemembered}
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
	m.stopped, m.events = true, nil
}

// expect notes events about to be sent, numbered and linked: pending until settled.
func (m *CommitMemory) expect(written []domain.AuditEvent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	for _, e := range written {
		if m.lost != 0 {
			return
		}
		if len(m.events) >= m.limit {
			m.lost = e.Seq
			return
		}
		var h [32]byte
		if n, err := hex.Decode(h[:], []byte(e.Hash)); err != nil || n != len(h) {
			m.lost = e.Seq // a link of another length is none this writer makes
			return
		}
		if r, ok := m.events[e.Seq]; ok && r.at != 0 {
			// This process committed an event at this seq already, and the head it was given
			// now is below it: that event was removed. Its memory stays, for the walk to find
			// the seq holding another event.
			continue
		}
		m.events[e.Seq] = remembered{hash: h}
	}
}

// settle tells what became of events expect was told: committed (and about to be answered as
// such), or not (forgotten: a caller told of a failure was promised nothing).
func (m *CommitMemory) settle(written []domain.AuditEvent, committed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	if committed {
		m.commits++
	}
	for _, e := range written {
		r, ok := m.events[e.Seq]
		if !ok || hex.EncodeToString(r.hash[:]) != e.Hash {
			continue
		}
		if committed {
			r.at = m.commits
			m.events[e.Seq] = r
		} else {
			delete(m.events, e.Seq)
		}
	}
}

// memoryCheck is what a walk makes of a row at seq with link hash (hex) against the memory.
type memoryCheck int

const (
	notRemembered      memoryCheck = iota
	asCommitted                    // committed, with this link
	otherThanCommitted             // committed with another link: a break
	pendingCommit                  // its commit is still being answered: look again after the walk
)

// check tells whether the row at seq with link hash is what this process committed there.
func (m *CommitMemory) check(seq int64, hash string) memoryCheck {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.events[seq]
	switch {
	case !ok:
		return notRemembered
	case r.at == 0:
		return pendingCommit
	case hex.EncodeToString(r.hash[:]) != hash:
		return otherThanCommitted
	}
	return asCommitted
}

// committedNow is the commits counter: events settled as committed by now have at <= it.
func (m *CommitMemory) committedNow() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.commits
}

// missing is the lowest seq above walked of an event committed by the time the counter read
// before (committedNow), which a walk that began after it should have met; 0 when there is none.
// Past maxRemembered it is the first seq not kept.
func (m *CommitMemory) missing(walked int64, before uint64) (seq int64, why string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for s, r := range m.events {
		if s > walked && r.at != 0 && r.at <= before && (seq == 0 || s < seq) {
			seq = s
		}
	}
	if seq != 0 {
		return seq, "this process committed an audit event at this seq and answered for it, and the trail ends before it: it was deleted"
	}
	if m.lost != 0 {
		return m.lost, fmt.Sprintf("this process committed more than %d audit events since its signer last checked the trail and remembers none from here on: it cannot vouch for them, so signs nothing more (restart serve to walk on from the last checkpoint)", m.limit)
	}
	return 0, ""
}

// forget drops what a walk has checked: every event at or below seq.
func (m *CommitMemory) forget(seq int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for s, r := range m.events {
		if s <= seq && r.at != 0 {
			delete(m.events, s)
		}
	}
}
