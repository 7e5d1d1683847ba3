package auditlog_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"backoffice/internal/auditlog"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// BenchmarkFollowAuditChain walks a trail of decrypts' events from its genesis, as the checkpoint
// signer does with every event serve writes: its cost an event is paid on the server's core
// beside the requests that wrote them.
//
//	go test ./internal/store -run '^$' -bench FollowAuditChain -count 5
func BenchmarkFollowAuditChain(b *testing.B) {
	const events = 5000
	for _, engine := range testdb.Engines() {
		b.Run(engine, func(b *testing.B) {
			st := testdb.Open(b, engine)
			testdb.SealAsServeDoes(b, st)
			writeDecryptEvents(b, st, events)
			ring := testdb.Ring(b)
			for b.Loop() {
				f, err := auditlog.FollowAuditChainResting(context.Background(), st.Trail(), auditlog.NoRest, ring, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				if v, err := f.Next(context.Background()); err != nil || v.Seq() != events {
					b.Fatalf("verified up to seq %d (%v), want %d", v.Seq(), err, events)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
		})
	}
}

// writeDecryptEvents records n decrypts' events from several goroutines, so that they share
// commits as under load.
func writeDecryptEvents(tb testing.TB, st *store.Store, n int) {
	const writers = 50
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := w; i < n; i += writers {
				err := st.RecordAudit(context.Background(), domain.AuditEvent{At: fixtureNow.Add(time.Duration(i) * time.Second),
					ActorUserID: staffUser, Action: "principal.decrypt", TargetID: principalA.String(),
					Outcome: domain.OutcomeGranted, Detail: "field ssn"})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkFollowNext is the checkpoint signer's tick after 5,000 decrypts' events of this
// process: carried over from its memory of its commits (what serve does), and walked row by row
// (what it does after another process appended; a follower without the memory), side by side.
// ns/event is the tick's cost over the events it covers.
//
//	go test ./internal/store -run '^$' -bench FollowNext -count 5
func BenchmarkFollowNext(b *testing.B) {
	const events = 5000
	for _, engine := range testdb.Engines() {
		for _, how := range []string{"carried", "walked"} {
			b.Run(engine+"/"+how, func(b *testing.B) {
				st := testdb.Open(b, engine)
				testdb.SealAsServeDoes(b, st)
				var mem *auditlog.CommitMemory
				if how == "carried" {
					mem = st.RememberCommits()
				}
				f, err := auditlog.FollowAuditChainResting(context.Background(), st.Trail(), auditlog.NoRest, testdb.Ring(b), nil, mem)
				if err != nil {
					b.Fatal(err)
				}
				var elapsed time.Duration
				for i := range b.N {
					writeDecryptEvents(b, st, events)
					began := time.Now()
					if v, err := f.Next(context.Background()); err != nil || v.Seq() != int64((i+1)*events) {
						b.Fatalf("verified up to seq %d (%v), want %d", v.Seq(), err, (i+1)*events)
					}
					elapsed += time.Since(began)
				}
				b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*events), "ns/event")
			})
		}
	}
}
