package store_test

import (
	"fmt"
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
// page) of one entity with a million logs, on each engine. The store is built once per engine,
// through Import, before any timing; the import's duration is logged.
//
//	go test ./internal/store -run '^$' -bench ListSAMActionLogs -benchtime 2000x
func BenchmarkListSAMActionLogs(b *testing.B) {
	for _, engine := range testdb.Engines() {
		b.Run(engine, func(b *testing.B) {
			st := millionLogStore(b, engine)
			for _, page := range []int64{1, 50_000} {
				b.Run(fmt.Sprintf("page=%d", page), func(b *testing.B) {
					for b.Loop() {
						logs, total, err := store.ListSAMActionLogs(ctx, st, merchantB, page, 20)
						if err != nil || len(logs) != 20 || total != benchLogs {
							b.Fatalf("page %d: %d logs, total %d, %v", page, len(logs), total, err)
						}
					}
				})
			}
		})
	}
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
