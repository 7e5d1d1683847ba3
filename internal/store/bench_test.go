package store_test

import (
	"context"
	"fmt"
	"testing"

	"backoffice/internal/testdb"
)

// BenchmarkListSAMActionLogs pages through an entity with 200,000 logs (set up only when
// benchmarks run): a deep page must cost what the first does.
func BenchmarkListSAMActionLogs(b *testing.B) {
	st := testdb.Open(b, "sqlite")
	ds := samBase()
	lead := ds.Leads[0].ID
	ds.SAMActionLogs = logs(lead, 0, 200_000)
	if _, err := st.Import(context.Background(), ds, nil); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, page := range []int64{1, 5_000, 10_000} {
		b.Run(fmt.Sprintf("page=%d", page), func(b *testing.B) {
			for b.Loop() {
				got, total, err := st.ListSAMActionLogs(ctx, lead, page, 20)
				if err != nil || len(got) != 20 || total != 200_000 {
					b.Fatal(len(got), total, err)
				}
			}
		})
	}
	b.Run("past the end", func(b *testing.B) {
		for b.Loop() {
			if got, _, err := st.ListSAMActionLogs(ctx, lead, 1_000_000, 20); err != nil || len(got) != 0 {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkImportSAMLogs imports 100,000 logs into a fresh entity.
func BenchmarkImportSAMLogs(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		st := testdb.Open(b, "sqlite")
		ds := samBase()
		ds.SAMActionLogs = logs(ds.Leads[0].ID, 0, 100_000)
		b.StartTimer()
		if _, err := st.Import(context.Background(), ds, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(100_000*b.N)/b.Elapsed().Seconds(), "logs/s")
}
