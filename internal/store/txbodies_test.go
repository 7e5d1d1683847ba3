package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// auditRecorder is how a caller that holds the store as an interface records an event.
type auditRecorder interface {
	RecordAudit(ctx context.Context, e domain.AuditEvent) error
}

// errBodyFailed is a transaction body's own failure, after its event: the transaction rolls back.
var errBodyFailed = errors.New("the body failed after its event")

// A transaction's body that calls back into the store to record an audit event, however it
// reaches it, never waits for itself: on SQLite every such call meets this process's write lock,
// which the body's own transaction holds, and fails with ErrWriteWait after the busy timeout; on
// PostgreSQL it fails so once the body has taken the chain's turn (it appended its own event),
// and before that it commits on its own, before the call returns. An event appended through the
// transaction joins it: committed with it, rolled back with it.
func TestTransactionBodiesCannotDeadlock(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		const wait = 200 * time.Millisecond
		store.SetBusyWait(st, wait) // SQLite's; PostgreSQL's chain turn waits its own 10 s
		sqlite := st.Engine() == "sqlite"
		n := 0
		event := func() domain.AuditEvent {
			n++
			return domain.AuditEvent{At: time.Now(), ActorUserID: domain.SystemActorID, Action: "principal.decrypt",
				TargetID: fmt.Sprint("p", n), Outcome: domain.OutcomeGranted}
		}
		var rec auditRecorder = st
		record := st.RecordAudit
		forms := []struct {
			name string
			call func(ctx context.Context) error
		}{
			{"the store, captured", func(ctx context.Context) error { return st.RecordAudit(ctx, event()) }},
			{"an interface holding the store", func(ctx context.Context) error { return rec.RecordAudit(ctx, event()) }},
			{"a method value", func(ctx context.Context) error { return record(ctx, event()) }},
			{"a goroutine the body waits for", func(ctx context.Context) error {
				errc := make(chan error, 1)
				go func() { errc <- st.RecordAudit(ctx, event()) }()
				return <-errc
			}},
			{"a write on the pool", func(ctx context.Context) error {
				return store.Exec(ctx, st, `UPDATE partners SET name = name WHERE id = ?`, "none")
			}},
		}
		for _, f := range forms {
			for _, appendFirst := range []bool{false, true} {
				if appendFirst && !sqlite && f.name != forms[0].name {
					continue // each waits PostgreSQL's whole 10 s: the first form stands for them
				}
				name := f.name
				if appendFirst {
					name += ", after the body's own event"
				}
				t.Run(name, func(t *testing.T) {
					before := countEvents(t, st)
					done := make(chan error, 1)
					go func() {
						done <- store.InTx(ctx, st, func(q *sqltx.Tx) error {
							if appendFirst {
								if err := store.AppendAudit(ctx, st, q, event()); err != nil {
									return err
								}
							}
							if err := f.call(ctx); err != nil {
								return err
							}
							return errBodyFailed
						})
					}()
					var err error
					select {
					case err = <-done:
					case <-time.After(time.Minute):
						t.Fatal("the transaction waited for itself")
					}
					refused := errors.Is(err, store.ErrWriteWait) && errors.Is(err, store.ErrUnavailable)
					after := countEvents(t, st)
					switch {
					case sqlite || appendFirst && f.name != "a write on the pool":
						if !refused {
							t.Fatalf("err = %v, want ErrWriteWait", err)
						}
						if after != before {
							t.Errorf("%d events committed by a refused call", after-before)
						}
					default: // PostgreSQL, the chain's turn not taken: the call commits on its own
						if !errors.Is(err, errBodyFailed) {
							t.Fatalf("err = %v, want the body's own failure", err)
						}
						if want := before + 1; f.name != "a write on the pool" && after != want {
							t.Errorf("%d events, want %d: the call's own, committed before it returned", after, want)
						}
					}
				})
			}
		}
		// The joining form: appended through the transaction, committed with it.
		before := countEvents(t, st)
		if err := store.InTx(ctx, st, func(q *sqltx.Tx) error { return store.AppendAudit(ctx, st, q, event()) }); err != nil {
			t.Fatal(err)
		}
		if got := countEvents(t, st); got != before+1 {
			t.Fatalf("%d events after the joining form, want %d", got, before+1)
		}
		// The store is as good as before, and the chain holds.
		if err := st.RecordAudit(ctx, event()); err != nil {
			t.Fatalf("an event after the refusals: %v", err)
		}
		rep, err := st.VerifyAuditChain(ctx, testdb.Ring(t), nil)
		if err != nil || rep.Break != nil {
			t.Fatalf("verify: %+v, %v", rep, err)
		}
	})
}

func countEvents(t *testing.T, st *store.Store) int {
	t.Helper()
	n, err := store.Count(ctx, st, "audit_events")
	if err != nil {
		t.Fatal(err)
	}
	return n
}
