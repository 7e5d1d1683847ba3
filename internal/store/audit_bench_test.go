package store_test

import (
	"context"
	"testing"
	"time"

	"backoffice/internal/domain"
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
