package auditlog

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// auditWriter commits audit events in groups. Every disclosure writes one, so under load the
// events of many requests arrive together: one goroutine takes whatever is waiting (up to
// maxAuditGroup), writes it in one transaction on the pool, and answers each waiting caller with
// the outcome of that commit. A caller is answered only after its event is committed, so no event
// can be lost after the service has acted on it; a single caller waits for one commit, as
// before. One commit per group instead of per event is what lets decrypts scale: the commit,
// not the insert, is the expensive part of a write.
//
// It writes and does nothing else: it knows nothing of the reads of the requests whose events it
// writes, so a group waiting for the write lock (another process's import, say) holds up no
// request but those waiting for their events.
type auditWriter struct {
	once     sync.Once
	stopOnce sync.Once
	reqs     chan auditReq
	// tip is the chain's head after the group it committed last, nil when it does not know it
	// (before its first group, after a failure); only its goroutine reads or sets it.
	tip  *chainTip
	quit chan struct{}
	done chan struct{}
}

type auditReq struct {
	event domain.AuditEvent
	errc  chan error
}

const maxAuditGroup = 128

// maxAuditLinger bounds how long a group waits for company, whatever the last commit took (see
// writerTurn.lingerFor).
const maxAuditLinger = 2 * time.Millisecond

var errStoreClosed = errors.New("store: closed")

// RecordAudit writes one audit event, and returns once it is committed: a caller may disclose
// what the event records only after that. Concurrent events share a transaction (group commit,
// see auditWriter); none is ever acknowledged before its commit.
func (s *Log) RecordAudit(ctx context.Context, e domain.AuditEvent) error {
	return s.audits.record(ctx, s, e)
}

func (w *auditWriter) start(s *Log) {
	w.once.Do(func() {
		w.reqs = make(chan auditReq)
		w.quit, w.done = make(chan struct{}), make(chan struct{})
		go w.run(s)
	})
}

func (w *auditWriter) record(ctx context.Context, s *Log, e domain.AuditEvent) error {
	w.start(s)
	req := auditReq{event: e, errc: make(chan error, 1)}
	// The event is written whatever the caller's request does meanwhile (a client that went away
	// has made its attempt all the same), and the caller is told what became of it: decrypts are
	// counted by their audited outcome, and an audit reported as failed must be one that was not
	// written. The writer answers every event it takes, within a commit (or at its busy timeout,
	// or when the store closes).
	select {
	case w.reqs <- req:
	case <-w.quit:
		return errStoreClosed
	}
	return <-req.errc
}

// groupWait is where the pending group stands with waiting.
type groupWait int

const (
	mayLinger groupWait = iota // it may still wait for company
	lingering                  // it waits for company (linger runs)
	due                        // it commits as soon as the writer gets to it
)

// writerTurn is what the writer's goroutine holds between two turns: the group to commit, which
// may be lingering for company.
type writerTurn struct {
	group  []auditReq
	linger *time.Timer
	wait   groupWait
	last   int           // the size of the last group committed
	took   time.Duration // how long writing the last group took
}

func (w *auditWriter) run(s *Log) {
	defer close(w.done)
	t := &writerTurn{group: make([]auditReq, 0, maxAuditGroup), linger: time.NewTimer(time.Hour)}
	t.linger.Stop()
	for {
		select {
		case <-w.quit:
			t.answerAll(errStoreClosed)
			return
		case r := <-t.intake(w):
			t.group = append(t.group, r)
		case <-t.linger.C:
			t.wait = due
		}
		w.gather(t)
		if t.wait == lingering && !t.expectsCompany() { // the company came
			t.linger.Stop()
			t.wait = due
		}
		if len(t.group) > 0 && t.wait != lingering {
			w.lingerOrCommit(s, t)
		}
	}
}

// gather adds the events already waiting, without waiting for more: under load the events that
// arrived during the previous commit share the next one, and a lone one is served at once.
func (w *auditWriter) gather(t *writerTurn) {
	for {
		select {
		case r := <-t.intake(w):
			t.group = append(t.group, r)
		default:
			return
		}
	}
}

// commit writes the group in one transaction on the pool and answers its callers with the
// outcome; its statements are prepared first, again before each group while that fails (a store
// not yet migrated). Like any writer it waits for the write lock up to the engine's busy
// timeout, whether another process or a transaction of this one holds it (the store's writeLock).
func (w *auditWriter) commit(s *Log, t *writerTurn) {
	if err := s.prepareAuditOnce(context.Background()); err != nil {
		s.observeGroup(len(t.group), 0, err)
		answer(t.group, err)
	} else {
		began := time.Now()
		err := w.write(s, eventsOf(t.group))
		t.took = time.Since(began)
		s.observeGroup(len(t.group), t.took, err) // before the answers: a caller answered was counted
		answer(t.group, err)
	}
	t.last, t.wait = len(t.group), mayLinger
	t.group = t.group[:0]
}

// answer tells each caller of group the outcome of its commit.
func answer(group []auditReq, err error) {
	for _, r := range group {
		r.errc <- err
	}
}

func eventsOf(group []auditReq) []domain.AuditEvent {
	events := make([]domain.AuditEvent, len(group))
	for i, r := range group {
		events[i] = r.event
	}
	return events
}

// write appends events to the chain, committed when it returns. Where the engine can
// (PostgreSQL, auditChain.appendAfter) and the writer knows the head it committed last, in one
// statement that appends only if the head is still that one; otherwise, or when another writer
// moved the head meanwhile (another replica, a transaction of this process recording its own
// event), or its connection was lost, in a transaction that reads the head under the chain's
// lock (Append). A failure forgets the head: a commit whose answer was lost may have moved it, and
// the next group reads it again. Either way the group is read back before it commits, and a
// group that does not read back as written fails with ErrNotLanded (see readBack). The checkpoint
// signers' memories (CommitMemory) are told each try's run before its rows are sent, and what
// became of them once it is answered.
func (w *auditWriter) write(s *Log, events []domain.AuditEvent) error {
	ctx := context.Background()
	chain := s.chain()
	var sent func(committed bool) // settles the last try's run
	memories := chain.memories
	chain.memories = nil // told here, each try's run settled as the try fared
	if memories != nil {
		chain.expect = func(r commitRun) { sent = rememberRun(memories, r) }
	}
	settle := func(committed bool) {
		if sent != nil {
			sent(committed)
		}
		sent = nil
	}
	chain.known = w.tip
	tip, err := chainTip{}, errChainMoved
	if w.tip != nil && chain.afterTip {
		tip, err = chain.appendAfter(ctx, s.db, *w.tip, events)
	}
	// A connection lost under the statement (a server process ended, a failover) most likely
	// never ran it; the transaction's BEGIN is retried on a fresh connection, and its head is read
	// under the lock. Should the lost statement have committed after all, the same event ids
	// make the second insert fail rather than write the group twice.
	if errors.Is(err, errChainMoved) || errors.Is(err, errTrailGuard) || s.db.LostConnection(ctx, err) {
		settle(false)
		err = s.db.Tx(ctx, func(q *sqltx.Tx) error {
			var err error
			tip, err = chain.appendLocked(ctx, q, events)
			return err
		})
	}
	settle(err == nil)
	w.tip = nil
	if err == nil {
		w.tip = &tip
	}
	return err
}

// lingerOrCommit first yields to the requests ready to run (yieldToReady), then commits the group
// or lets it wait for as many events as the last group had, at most as long as the last commit
// took (lingerFor; PostgreSQL's commit_delay and commit_siblings, with the siblings counted by the
// last commit and the delay by its time). Under concurrent decrypts the events of the requests in
// flight then share one commit (its BEGIN, the chain's head, its sync, and one write of each
// B-tree's page) instead of a commit each. A lone caller is never held.
func (w *auditWriter) lingerOrCommit(s *Log, t *writerTurn) {
	w.yieldToReady(t)
	if t.shouldLinger() {
		t.wait = lingering
		t.linger.Reset(t.lingerFor())
		return
	}
	w.commit(s, t)
}

// yieldToReady lets the goroutines ready to run go first (one runtime.Gosched), then gathers the
// events they handed in. Under load those goroutines are requests already read off their
// connections, on their way to their own audit event: on one core, a writer that committed at
// once would commit the first of them alone, and the rest would wait a whole commit for the next.
// So the groups grow to the requests in flight, and with them decrypts a second
// (docs/performance.md measures it against the writer without the yield). A lone caller yields
// to nobody.
func (w *auditWriter) yieldToReady(t *writerTurn) {
	if len(t.group) == maxAuditGroup {
		return
	}
	runtime.Gosched()
	w.gather(t)
}

// lingerFor is how long a group may wait for company: as long as the last commit took, and never
// more than maxAuditLinger. A request that arrives just after a commit began waits that long for
// the next commit anyway, so a group's first caller waits at most what a late one does; and under
// load the requests in flight reach the writer spread over about that time, so the group takes
// them all instead of committing the first few and making the rest wait a whole commit behind it
// (docs/performance.md measures it). Bound to the last commit, the wait shrinks with a fast disk;
// bound to maxAuditLinger, a disk's stall does not stretch it.
func (t *writerTurn) lingerFor() time.Duration {
	return min(t.took, maxAuditLinger)
}

// intake is where the group takes events from: nowhere while it is full, until it is committed.
func (t *writerTurn) intake(w *auditWriter) chan auditReq {
	if len(t.group) == maxAuditGroup {
		return nil
	}
	return w.reqs
}

// shouldLinger: only a group that has not lingered yet and still expects company.
func (t *writerTurn) shouldLinger() bool {
	return t.wait == mayLinger && t.expectsCompany()
}

// expectsCompany: the last group was larger than this one is, and this one is not full. A group
// stops waiting once it is as large as the last: with two callers it waits for the second and no
// longer, and under load it waits at most lingerFor.
func (t *writerTurn) expectsCompany() bool {
	return len(t.group) < t.last && len(t.group) < maxAuditGroup
}

// answerAll tells every caller still waiting that the store closed.
func (t *writerTurn) answerAll(err error) {
	for _, r := range t.group {
		r.errc <- err
	}
}

// stop ends the writer; later callers are told the store is closed.
func (w *auditWriter) stop() {
	w.stopOnce.Do(func() {
		w.once.Do(func() { w.quit = make(chan struct{}) }) // never started: stays stopped
		close(w.quit)
		if w.done != nil {
			<-w.done
		}
	})
}

// auditInsertRows[k] inserts 1<<k audit events.
var auditInsertRows = func() []string {
	var texts []string
	for n := 1; n <= maxAuditGroup; n *= 2 {
		texts = append(texts, auditInsertHead+sqltx.ValueRows(auditColumns, n))
	}
	return texts
}()
