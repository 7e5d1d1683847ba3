package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"sync"

	"backoffice/internal/domain"
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
		err := s.tx(context.Background(), func(q querier) error {
			return s.insertAuditGroup(context.Background(), q, group)
		})
		for _, r := range group {
			r.errc <- err
		}
	}
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

// insertAuditGroup writes a group's events in the transaction q, as few multi-row INSERTs as
// powers of two allow (a group of 11 is 8 + 2 + 1 rows): running a statement costs more than
// the rows it carries. There is one text per power of two up to maxAuditGroup, each a cached
// prepared statement: parsing and planning anew for every group was most of a group's cost.
func (s *Store) insertAuditGroup(ctx context.Context, q querier, group []auditReq) error {
	tx, ok := q.x.(*sql.Tx)
	if !ok {
		return errors.New("store: audit events written outside a transaction")
	}
	args := make([]any, 0, 7*len(group))
	for len(group) > 0 {
		n := 1 << (bits.Len(uint(len(group))) - 1)
		st, err := s.stmts.get(ctx, s.sql(auditInsertRows[bits.Len(uint(n))-1]))
		if err != nil {
			return fmt.Errorf("store: audit event: %w", s.classify(err))
		}
		args = args[:0]
		for _, r := range group[:n] {
			e := r.event
			if e.ID == "" {
				e.ID = domain.NewTimeOrderedID(e.At)
			}
			args = append(args, auditArgs(e)...)
		}
		txst := tx.StmtContext(ctx, st)
		_, err = txst.ExecContext(ctx, args...)
		txst.Close()
		if err != nil {
			return fmt.Errorf("store: audit event: %w", s.classify(err))
		}
		group = group[n:]
	}
	return nil
}

// auditInsertRows[k] inserts 1<<k audit events.
var auditInsertRows = func() []string {
	var texts []string
	for n := 1; n <= maxAuditGroup; n *= 2 {
		texts = append(texts, auditInsertHead+strings.Repeat(auditInsertRow+", ", n-1)+auditInsertRow)
	}
	return texts
}()
