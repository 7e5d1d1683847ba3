package store_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// benchLogs is how many SAM action logs the benchmark's one entity has.
const benchLogs = 1_000_000

// BenchmarkListSAMActionLogs lists the first and a deep page (50,000 of size 20: the last full
// page) of one entity with a million logs, on each engine, with the read cache off (a cached
// page costs the same at any depth: the cache is not what is measured). Then it imports, one
// import each, logs older than nearly all stored ones (late logs: every bucket of counts but the
// oldest few moves), and reads both pages again. Each run reports its p50 and p99 besides the
// mean. The store is built once per engine, through Import, before any timing; the import's
// duration is logged.
//
//	go test ./internal/store -run '^$' -bench ListSAMActionLogs -benchtime 2000x
func BenchmarkListSAMActionLogs(b *testing.B) {
	for _, engine := range testdb.Engines() {
		b.Run(engine, func(b *testing.B) {
			st := millionLogStore(b, engine)
			store.WithoutReadCache(st)
			late := 0
			pages := func(b *testing.B, suffix string) {
				for _, page := range []int64{1, 50_000} {
					b.Run(fmt.Sprintf("page=%d%s", page, suffix), func(b *testing.B) {
						want := int64(benchLogs + late)
						timed(b, func() {
							logs, total, err := store.ListSAMActionLogs(ctx, st, merchantB, page, 20)
							if err != nil || len(logs) != 20 || total != want {
								b.Fatalf("page %d: %d logs, total %d, %v", page, len(logs), total, err)
							}
						})
					})
				}
			}
			pages(b, "")
			b.Run("late log", func(b *testing.B) {
				timed(b, func() {
					// Older than all but the oldest thousand or so stored logs, each its own import.
					at := fixtureNow.Add(-time.Duration(benchLogs-2000) * time.Second).Add(time.Duration(late) * time.Microsecond)
					ds := &dataset.Dataset{SAMActionLogs: []domain.SAMActionLog{samLog(20_000_000+late, merchantB, at)}}
					if _, err := dataset.ImportWith(ctx, st, ds, nil, dataset.Options{Upsert: true}); err != nil {
						b.Fatal(err)
					}
					late++
				})
			})
			pages(b, ",after late logs")
		})
	}
}

// timed runs op b.N times and reports, besides the mean, the p50 and p99 of its durations.
func timed(b *testing.B, op func()) {
	durations := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		op()
		durations = append(durations, time.Since(start))
	}
	slices.Sort(durations)
	at := func(q float64) float64 { return float64(durations[int(q*float64(len(durations)-1))].Nanoseconds()) }
	b.ReportMetric(at(0.50), "p50-ns")
	b.ReportMetric(at(0.99), "p99-ns")
}

// millionLogStore imports the fixture and a million logs on merchantB into a fresh store of the
// engine. A sub-benchmark's parent function runs once, so this runs once per engine.
func millionLogStore(b *testing.B, engine string) *store.Store {
	b.Helper()
	st := testdb.Open(b, engine)
	if _, err := dataset.Import(ctx, st, fixture(), testdb.Ring(b)); err != nil {
		b.Fatal(err)
	}
	ds := &dataset.Dataset{SAMActionLogs: make([]domain.SAMActionLog, benchLogs)}
	for i := range ds.SAMActionLogs {
		// Dates in a scrambled order, in seconds, a few of them shared, so that positions have
		// to be computed rather than follow the file.
		at := fixtureNow.Add(-time.Duration(i*7919%(benchLogs-1000)) * time.Second)
		ds.SAMActionLogs[i] = samLog(10_000_000+i, merchantB, at)
	}
	start := time.Now()
	if _, err := dataset.Import(ctx, st, ds, nil); err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: imported %d SAM action logs in %v", engine, benchLogs, time.Since(start).Round(time.Millisecond))
	return st
}

// BenchmarkWritable is the write probe of GET /readyz on each engine, idle (the probes of a load
// balancer every few seconds). With p50 and p99 besides the mean.
//
//	go test ./internal/store -run '^$' -bench Writable -benchtime 500x
func BenchmarkWritable(b *testing.B) {
	for _, engine := range testdb.Engines() {
		b.Run(engine, func(b *testing.B) {
			st := testdb.Open(b, engine)
			timed(b, func() {
				if err := st.Writable(ctx); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
