package store

import (
	"context"
	"errors"
	"sync"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/store/sqlite"
	"backoffice/internal/store/sqltx"
)

// auditWriter commits audit events in groups. Every disclosure writes one, so under load the
// events of many requests arrive together: one goroutine takes whatever is waiting (up to
// maxAuditGroup), writes it in one transaction, and answers each waiting caller with the
// outcome of that commit. A caller is answered only after its event is committed, so no event
// can be lost after the service has acted on it; a single caller waits for one commit, as
// before. One commit per group instead of per event is what lets decrypts scale: the commit,
// not the insert, is the expensive part of a write.
//
// Beside a read cache (SQLite) the same goroutine owns the change counter's connection, and so
// also answers the cache's checks (version): SQLite does not count a connection's own commits in
// its data_version, so the audit commits made there leave the cache valid, and one goroutine
// taking turns on the connection never makes a check queue for a lock behind a commit. The checks
// that arrive while it works share one read, made after all of them arrived: each sees every
// commit made before it asked, which is all a check promises.
type auditWriter struct {
	once     sync.Once
	stopOnce sync.Once
	reqs     chan auditReq
	checks   chan chan versionAnswer
	prepared bool // its statements are prepared (only its goroutine reads or sets it)
	quit     chan struct{}
	done     chan struct{}
}

type auditReq struct {
	event domain.AuditEvent
	errc  chan error
}

type versionAnswer struct {
	version int64
	err     error
}

const maxAuditGroup = 128

// auditLinger is how long a group waits, at most, for company when the last one had some.
const auditLinger = 200 * time.Microsecond

var errStoreClosed = errors.New("store: closed")

func (w *auditWriter) start(s *Store) {
	w.once.Do(func() {
		w.reqs, w.checks = make(chan auditReq), make(chan chan versionAnswer)
		w.quit, w.done = make(chan struct{}), make(chan struct{})
		go w.run(s)
	})
}

func (w *auditWriter) record(ctx context.Context, s *Store, e domain.AuditEvent) error {
	w.start(s)
	req := auditReq{event: e, errc: make(chan error, 1)}
	select {
	case w.reqs <- req:
	case <-w.quit:
		return errStoreClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	// Once handed over, the event is written whatever the caller does next; waiting for the
	// answer is what tells the caller it may go on.
	select {
	case err := <-req.errc:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// version is the change counter's reading, made after the call began (the read cache's check).
func (w *auditWriter) version(ctx context.Context, s *Store) (int64, error) {
	w.start(s)
	answer := make(chan versionAnswer, 1)
	select {
	case w.checks <- answer:
	case <-w.quit:
		return 0, errStoreClosed
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	select {
	case a := <-answer:
		return a.version, a.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// groupWait is where the pending group stands with waiting.
type groupWait int

const (
	mayLinger groupWait = iota // it may still wait for company
	lingering                  // it waits for company (retry runs)
	pausing                    // it met another process's write lock and waits a pause (retry runs)
	due                        // it commits as soon as the writer gets to it
)

// writerTurn is what the writer's goroutine holds between two turns: the checks to answer, and
// the group to commit, which may be waiting out another process's write lock (retry set).
type writerTurn struct {
	checks   []chan versionAnswer
	group    []auditReq
	retry    *time.Timer
	wait     groupWait
	last     int       // the size of the last group committed
	deadline time.Time // when a group that keeps meeting the lock gives up
	pause    time.Duration
}

func (w *auditWriter) run(s *Store) {
	defer close(w.done)
	t := &writerTurn{group: make([]auditReq, 0, maxAuditGroup), retry: time.NewTimer(time.Hour)}
	t.retry.Stop()
	for {
		select {
		case <-w.quit:
			t.answerAll(errStoreClosed)
			return
		case c := <-w.checks:
			t.checks = append(t.checks, c)
		case r := <-t.intake(w):
			t.group = append(t.group, r)
		case <-t.retry.C:
			t.wait = due
		}
		w.gather(t)
		t.answerChecks(s)
		if t.wait == lingering && !t.expectsCompany() { // the company came
			t.retry.Stop()
			t.wait = due
		}
		if len(t.group) > 0 && t.wait != lingering && t.wait != pausing {
			w.lingerOrCommit(s, t)
		}
	}
}

// gather adds what is already waiting, without waiting for more: under load the checks and
// events that arrived during the previous turn share the next one, and a lone one is served at
// once.
func (w *auditWriter) gather(t *writerTurn) {
	for {
		select {
		case c := <-w.checks:
			t.checks = append(t.checks, c)
		case r := <-t.intake(w):
			t.group = append(t.group, r)
		default:
			return
		}
	}
}

// commit writes the group and answers its callers, unless the group met another process's write
// lock: beside a read cache the group's connection is the change counter's, which never waits
// for that lock (checks are read on it and would wait too). The group then waits a pause, while
// checks go on being answered, and is tried again, for as long as the pool's writers would wait;
// nothing is written by a try that met the lock.
func (w *auditWriter) commit(s *Store, t *writerTurn) {
	events := make([]domain.AuditEvent, len(t.group))
	for i, r := range t.group {
		events[i] = r.event
	}
	err := w.prepare(s)
	if err == nil {
		chain := s.chain()
		err = s.txOn(context.Background(), s.auditStmts.DB(), s.auditStmts, func(q *sqltx.Tx) error {
			return chain.Append(context.Background(), q, events)
		})
	}
	if err != nil && s.engine.IsBusy(err) {
		if t.deadline.IsZero() {
			t.deadline, t.pause = time.Now().Add(sqlite.BusyTimeout), time.Millisecond
		}
		if time.Now().Before(t.deadline) {
			t.wait = pausing // and after the pause, due: it does not linger as well
			t.retry.Reset(t.pause)
			t.pause = min(2*t.pause, 50*time.Millisecond)
			return
		}
	}
	for _, r := range t.group {
		r.errc <- err
	}
	t.last, t.wait = len(t.group), mayLinger
	t.group, t.deadline = t.group[:0], time.Time{}
}

// lingerOrCommit commits the group, or first lets it wait up to auditLinger for as many events as
// the last group had (PostgreSQL's commit_delay and commit_siblings, with the siblings counted by
// the last commit). Under concurrent decrypts the events of a few hundred microseconds then share
// one commit (its BEGIN, the chain's head, and one write of each B-tree's page) instead of a
// commit each; checks go on being answered meanwhile, which is what brings the next events in. A
// lone caller is never held.
func (w *auditWriter) lingerOrCommit(s *Store, t *writerTurn) {
	if t.shouldLinger() {
		t.wait = lingering
		t.retry.Reset(auditLinger)
		return
	}
	w.commit(s, t)
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
// longer, and under load it waits at most auditLinger.
func (t *writerTurn) expectsCompany() bool {
	return len(t.group) < t.last && len(t.group) < maxAuditGroup
}

// answerChecks answers every check waiting with one read of the change counter, made after all
// of them arrived.
func (t *writerTurn) answerChecks(s *Store) {
	if len(t.checks) == 0 {
		return
	}
	v, err := s.changes.Version(context.Background())
	for _, c := range t.checks {
		c <- versionAnswer{v, err}
	}
	t.checks = t.checks[:0]
}

// answerAll tells every caller still waiting that the store closed.
func (t *writerTurn) answerAll(err error) {
	for _, c := range t.checks {
		c <- versionAnswer{err: err}
	}
	for _, r := range t.group {
		r.errc <- err
	}
}

// prepare prepares the writer's statements once (prepareAudit), trying again before the next
// group while it fails (a store not yet migrated).
func (w *auditWriter) prepare(s *Store) error {
	if w.prepared {
		return nil
	}
	err := s.prepareAudit(context.Background())
	w.prepared = err == nil
	return err
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
