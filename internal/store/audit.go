package store

import (
	"context"
	"errors"
	"sync"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/store/sqlite"
)

// auditWriter commits audit events in groups. Every disclosure writes one, so under load the
// events of many requests arrive together: one goroutine takes whatever is waiting (up to
// maxAuditGroup), writes it in one transaction, and answers each waiting caller with the
// outcome of that commit. A caller is answered only after its event is committed, so no event
// can be lost after the service has acted on it; a single caller waits for one commit, as
// before. One commit per group instead of per event is what lets decrypts scale: the commit,
// not the insert, is the expensive part of a write.
type auditWriter struct {
	once     sync.Once
	stopOnce sync.Once
	reqs     chan auditReq
	prepared bool // its statements are prepared (only its goroutine reads or sets it)
	quit     chan struct{}
	done     chan struct{}
}

type auditReq struct {
	event domain.AuditEvent
	errc  chan error
}

const maxAuditGroup = 128

var errStoreClosed = errors.New("store: closed")

func (w *auditWriter) start(s *Store) {
	w.once.Do(func() {
		w.reqs, w.quit, w.done = make(chan auditReq), make(chan struct{}), make(chan struct{})
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

func (w *auditWriter) run(s *Store) {
	defer close(w.done)
	group := make([]auditReq, 0, maxAuditGroup)
	for {
		select {
		case <-w.quit:
			return
		case r := <-w.reqs:
			group = append(group[:0], r)
		}
		group = w.gather(group)
		events := make([]domain.AuditEvent, len(group))
		for i, r := range group {
			events[i] = r.event
		}
		err := w.commit(s, events)
		for _, r := range group {
			r.errc <- err
		}
	}
}

// commit writes one group. Beside a read cache the group's connection is the change counter's,
// which does not wait for another process's write lock (requests read the data version on it
// and would wait too): the group is tried again after a pause instead, for as long as the pool's
// writers would wait, and nothing is written by a try that met the lock.
func (w *auditWriter) commit(s *Store, events []domain.AuditEvent) error {
	deadline := time.Now().Add(sqlite.BusyTimeout)
	pause := time.Millisecond
	for {
		err := w.prepare(s)
		if err == nil {
			err = s.txOn(context.Background(), s.auditStmts.db, s.auditStmts, func(q querier) error {
				return s.appendAudit(context.Background(), q, events)
			})
		}
		if err == nil || !s.engine.IsBusy(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-w.quit:
			t.Stop()
			return errStoreClosed
		}
		pause = min(2*pause, 50*time.Millisecond)
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

// gather adds the events already waiting to group, without waiting for more: under load the
// events that arrived during the previous commit share the next one, and a lone event is written
// at once.
func (w *auditWriter) gather(group []auditReq) []auditReq {
	for len(group) < maxAuditGroup {
		select {
		case r := <-w.reqs:
			group = append(group, r)
		default:
			return group
		}
	}
	return group
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
		texts = append(texts, auditInsertHead+valueRows(auditColumns, n))
	}
	return texts
}()

const (
	auditInsertHead = `INSERT INTO audit_events (id, at, actor_user_id, action, target_id, outcome, detail, seq, chain_key_id, hash) VALUES `
	auditColumns    = 10
)
