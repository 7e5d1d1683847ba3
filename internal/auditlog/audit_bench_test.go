package auditlog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"backoffice/internal/auditlog"
	"backoffice/internal/cputime"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// BenchmarkRecordAudit writes audit events from many goroutines at once, as decrypts do under
// load: the group commit's throughput, which bounds decrypt throughput, on each engine.
//
//	go test ./internal/store -run '^$' -bench RecordAudit -count 5
func BenchmarkRecordAudit(b *testing.B) {
	for _, engine := range testdb.Engines() {
		b.Run(engine, func(b *testing.B) {
			st := testdb.Open(b, engine)
			ctx := context.Background()
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					err := st.RecordAudit(ctx, domain.AuditEvent{At: time.Now(), ActorUserID: samID(1),
						Action: "principal.decrypt", TargetID: samID(2).String(), Outcome: domain.OutcomeGranted, Detail: "field ssn"})
					if err != nil {
						b.Fatal(err)
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkAuditReadBack is what the audit writer's read-back costs (auditland.go): the group
// commit's throughput at 16 callers a core (events/s), and one caller's time per event (ns/op),
// with and without it, on two databases of one server, the two alternating round by round within one run
// (a shared host's load drifts more from minute to minute than the read-back costs).
//
//	go test ./internal/store -run '^$' -bench AuditReadBack -benchtime 2s
func BenchmarkAuditReadBack(b *testing.B) {
	const rounds = 5
	for _, engine := range []string{"sqlite", "postgres"} {
		// Two databases of one server: on PostgreSQL the append without the read-back
		// (audit_chain_append) writes no audit tree, which an append with it grows from.
		with, without := testdb.OpenURL(b, testdb.URL(b, engine)), testdb.OpenURL(b, testdb.URL(b, engine))
		auditlog.WithoutReadBack(without.Trail())
		for _, callers := range []int{16, 1} {
			for round := range rounds {
				for _, c := range []struct {
					name string
					st   *store.Store
				}{{"without", without}, {"with", with}} {
					b.Run(fmt.Sprintf("%s/callers=%d/%s/round=%d", engine, callers, c.name, round), func(b *testing.B) {
						recordAudits(b, c.st, callers)
					})
				}
			}
		}
	}
}

// recordAudits records b.N decrypts' events from callers goroutines a core (one caller when 1),
// and reports this process's CPU time an event (SQLite's work; PostgreSQL's server is another).
func recordAudits(b *testing.B, st *store.Store, callers int) {
	began := cputime.Process()
	record := func() {
		err := st.RecordAudit(context.Background(), domain.AuditEvent{At: time.Now(), ActorUserID: samID(1),
			Action: "principal.decrypt", TargetID: samID(2).String(), Outcome: domain.OutcomeGranted, Detail: "field ssn"})
		if err != nil {
			b.Fatal(err)
		}
	}
	if callers == 1 {
		for b.Loop() {
			record()
		}
	} else {
		b.SetParallelism(callers)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				record()
			}
		})
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	if began >= 0 {
		b.ReportMetric(float64((cputime.Process()-began).Microseconds())/float64(b.N), "cpu-µs/event")
	}
}

// BenchmarkTrailGuard is what the append's own check of the trail's catalog costs
// (trailguard.go): as BenchmarkAuditReadBack, with and without it, on the same database, the two
// alternating round by round within one run.
//
//	go test ./internal/store -run '^$' -bench TrailGuard -benchtime 2s
func BenchmarkTrailGuard(b *testing.B) {
	const rounds = 5
	for _, engine := range []string{"sqlite", "postgres"} {
		url := testdb.URL(b, engine)
		with, without := testdb.OpenURL(b, url), testdb.OpenURL(b, url)
		auditlog.WithoutTrailGuard(without.Trail())
		for _, callers := range []int{16, 1} {
			for round := range rounds {
				for _, c := range []struct {
					name string
					st   *store.Store
				}{{"without", without}, {"with", with}} {
					b.Run(fmt.Sprintf("%s/callers=%d/%s/round=%d", engine, callers, c.name, round), func(b *testing.B) {
						recordAudits(b, c.st, callers)
					})
				}
			}
		}
	}
}
