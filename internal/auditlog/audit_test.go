package auditlog_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// Concurrent events are committed in groups, and each caller hears back only after its own
// event is stored: every acknowledged event is in the database.
func TestRecordAuditConcurrently(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		const n = 300
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				errs <- st.RecordAudit(ctx, domain.AuditEvent{At: time.Unix(int64(i), 0), ActorUserID: samID(1),
					Action: "principal.decrypt", TargetID: samID(i).String(), Outcome: domain.OutcomeGranted, Detail: "field ssn"})
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		ds, err := dataset.Export(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		targets := map[string]bool{}
		for _, e := range ds.AuditEvents {
			targets[e.TargetID] = true
		}
		if len(ds.AuditEvents) != n || len(targets) != n {
			t.Fatalf("%d events, %d targets, want %d", len(ds.AuditEvents), len(targets), n)
		}
	})
}

func TestRecordAuditAfterClose(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	st.Close()
	if err := st.RecordAudit(context.Background(), domain.AuditEvent{ActorUserID: samID(1), Action: "x", TargetID: "y", Outcome: domain.OutcomeGranted}); err == nil {
		t.Fatal("an event was acknowledged by a closed store")
	}
	st.Close() // twice is harmless
}
