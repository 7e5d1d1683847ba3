package store_test

import (
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// importedLogs is how many SAM action logs the import beside the writers replaces.
const importedLogs = 100_000

// BenchmarkCredentialWritesBesideImport measures what writers of unrelated records cost each
// other on PostgreSQL: two replicas (two stores on one database), each with a few writers
// creating and revoking API keys and sessions of a user of their own, first alone for as long as
// an import takes by itself, then while a third store runs that upsert import again (the fixture
// and importedLogs SAM action logs on a merchant, all of them already stored: every row
// replaced). It reports, for each phase, the writes per second and their p50, p99 and longest
// latency, and the import's duration alone and beside the writers. A writer that waited for the
// import would show it in the second phase's p99 and longest write.
//
// It runs twice: as the store is, and with the read cache's generation left alone by every
// trigger (the function they call made to return at once), which is what the generation costs.
//
//	go test ./internal/store -run '^$' -bench CredentialWritesBesideImport -benchtime 1x
func BenchmarkCredentialWritesBesideImport(b *testing.B) {
	for _, engine := range testdb.PostgresEngines() {
		for _, generation := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/generation=%v", engine, generation), func(b *testing.B) {
				url := testdb.URL(b, engine)
				importer := testdb.OpenURL(b, url)
				replicas := []*store.Store{testdb.OpenURL(b, url), testdb.OpenURL(b, url)}
				for _, st := range replicas {
					st.SetChainSigner(testdb.Ring(b))
				}
				ds := fixture()
				for i := range importedLogs {
					ds.SAMActionLogs = append(ds.SAMActionLogs, samLog(30_000_000+i, merchantB, fixtureNow.Add(-time.Duration(i)*time.Second)))
				}
				if _, err := dataset.Import(ctx, importer, ds, testdb.Ring(b)); err != nil {
					b.Fatal(err)
				}
				// The writers' user is none of the import's: what they write is unrelated to it.
				users := &dataset.Dataset{Users: []domain.User{{ID: writersUser, Email: "writers@example.com", Permissions: []domain.Permission{}}}}
				if _, err := dataset.Import(ctx, importer, users, nil); err != nil {
					b.Fatal(err)
				}
				if !generation {
					if err := store.Exec(ctx, importer, `CREATE OR REPLACE FUNCTION cache_generation_bump() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`); err != nil {
						b.Fatal(err)
					}
				}
				// An upsert replaces records; the service's own (notes, audit events) are only added.
				ds.MerchantNotes, ds.AuditEvents = nil, nil
				upsert := func() time.Duration {
					start := time.Now()
					if _, err := dataset.ImportWith(ctx, importer, ds, testdb.Ring(b), dataset.Options{Upsert: true}); err != nil {
						b.Error(err)
					}
					return time.Since(start)
				}
				var next atomic.Int64
				for b.Loop() {
					alone := upsert()
					var beside time.Duration
					writesAlone := credentialWrites(b, replicas, &next, func() { time.Sleep(alone) })
					writesBeside := credentialWrites(b, replicas, &next, func() { beside = upsert() })
					b.ReportMetric(alone.Seconds(), "import-s-alone")
					b.ReportMetric(beside.Seconds(), "import-s-beside")
					writesAlone.report(b, "alone")
					writesBeside.report(b, "beside")
				}
			})
		}
	}
}

// writersUser is the user whose credentials the writers create and revoke.
var writersUser = id(39_000_000)

// writesPerReplica is how many writers each replica runs.
const writesPerReplica = 4

// writeTimes are the latencies of the writes made over a span.
type writeTimes struct {
	span      time.Duration
	latencies []time.Duration
}

func (w writeTimes) report(b *testing.B, phase string) {
	slices.Sort(w.latencies)
	at := func(q float64) float64 {
		return float64(w.latencies[int(q*float64(len(w.latencies)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(len(w.latencies))/w.span.Seconds(), "writes/s-"+phase)
	b.ReportMetric(at(0.50), "p50-ms-"+phase)
	b.ReportMetric(at(0.99), "p99-ms-"+phase)
	b.ReportMetric(at(1), "max-ms-"+phase)
}

// credentialWrites runs writesPerReplica writers on each replica while during runs, each in a
// loop creating an API key, revoking it, creating a session and revoking it, and returns the
// latencies of those writes, those still under way when during returned included.
func credentialWrites(b *testing.B, replicas []*store.Store, next *atomic.Int64, during func()) writeTimes {
	var (
		mu        sync.Mutex
		latencies []time.Duration
		wg        sync.WaitGroup
	)
	var stopped atomic.Bool
	timed := func(op func() error) bool {
		start := time.Now()
		if err := op(); err != nil {
			b.Error(err)
			return false
		}
		took := time.Since(start)
		mu.Lock()
		latencies = append(latencies, took)
		mu.Unlock()
		return true
	}
	for _, st := range replicas {
		for range writesPerReplica {
			wg.Go(func() {
				for !stopped.Load() {
					n := int(next.Add(1))
					key, session := id(40_000_000+2*n), id(40_000_001+2*n)
					secret := make([]byte, 32)
					rand.Read(secret)
					now := time.Now()
					_ = timed(func() error {
						return st.CreateAPIKey(ctx, store.NewAPIKey{ID: key, UserID: writersUser, Name: "bench", Prefix: fmt.Sprintf("b%011d", n),
							Hash: secret, CreatedAt: now}, event("api_key.create", key))
					}) && timed(func() error { return st.RevokeAPIKey(ctx, key, now, event("api_key.revoke", key)) }) &&
						timed(func() error {
							return st.CreateSession(ctx, store.NewSession{ID: session, UserID: writersUser, Hash: secret, CreatedAt: now,
								ExpiresAt: now.Add(time.Hour)}, event("session.create", session))
						}) && timed(func() error { return st.RevokeSession(ctx, session, now, event("session.revoke", session)) })
				}
			})
		}
	}
	start := time.Now()
	during()
	span := time.Since(start)
	stopped.Store(true) // writes under way finish, and count: a write held up by during shows
	wg.Wait()
	return writeTimes{span: span, latencies: latencies}
}
