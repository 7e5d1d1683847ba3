package store_test

import (
	"testing"

	"backoffice/internal/cputime"
	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// BenchmarkStatementCache runs the statements of the per-request paths, on each engine, two
// ways one after the other: "cached", each text prepared once on the pool and kept (sqltx.Stmts
// keeping statements), and "plain", each text handed to database/sql with its arguments every
// run, what the driver does with it left to the driver. The read cache is off: the reads are
// what is measured. On PostgreSQL the store keeps no statement (a pooler may stand in front),
// so "cached" there is what keeping them would give. The reads are the API key lookup, a service acceptance, a principal's sealed
// SSN and the read cache's generation (read before any cached answer is given); "audit event" is
// a decrypt's write, one event appended to the chain in its transaction. Besides ns/op it reports
// the process's CPU a run (cpu-ns/op), which waiting for a busy core does not move. Each way's
// runs follow each other under -count, so on a shared machine run it a few times with -count 1
// to interleave the two:
//
//	GOMAXPROCS=1 go test ./internal/store -run '^$' -bench StatementCache -benchmem
func BenchmarkStatementCache(b *testing.B) {
	// Not through a transaction-mode pooler, where no statement may be kept.
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			st := testdb.Open(b, engine)
			if _, err := dataset.Import(ctx, st, fixture(), testdb.Ring(b)); err != nil {
				b.Fatal(err)
			}
			store.WithoutReadCache(st)
			var hash []byte
			if err := store.DB(st).QueryRowContext(ctx, `SELECT key_hash FROM api_keys ORDER BY id LIMIT 1`).Scan(&hash); err != nil {
				b.Fatal(err)
			}
			ops := []struct {
				name string
				run  func() error
			}{
				{"api key", func() error { _, err := st.Credential(ctx, domain.CredentialAPIKey, hash); return err }},
				{"acceptance", func() error { _, err := st.ServiceAcceptance(ctx, domain.Scope{}, leadA); return err }},
				{"sealed ssn", func() error { _, err := st.PrincipalSSN(ctx, domain.Scope{}, leadA, principalA); return err }},
				{"generation", func() error { _, err := store.Generation(ctx, st); return err }},
				{"audit event", func() error { return st.RecordAudit(ctx, event("principal.decrypt", principalA)) }},
			}
			for _, op := range ops {
				b.Run(op.name, func(b *testing.B) {
					for _, way := range []string{"cached", "plain"} {
						b.Run(way, func(b *testing.B) {
							if way == "cached" && op.name == "audit event" && engine == "postgres" {
								// Its statement takes pgx's exec mode as its first argument, which a
								// prepared statement refuses.
								b.Skip("the audit append's statements cannot be prepared on PostgreSQL")
							}
							defer store.UseStatements(st, way == "cached")()
							if err := op.run(); err != nil { // prepared outside the timing
								b.Fatal(err)
							}
							b.ReportAllocs()
							cpu := cputime.Process()
							for b.Loop() {
								if err := op.run(); err != nil {
									b.Fatal(err)
								}
							}
							if cpu >= 0 {
								b.ReportMetric(float64(cputime.Process()-cpu)/float64(b.N), "cpu-ns/op")
							}
						})
					}
				})
			}
		})
	}
}
