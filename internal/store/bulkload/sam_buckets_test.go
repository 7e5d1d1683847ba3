package bulkload_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/store/bulkload"
	"backoffice/internal/testdb"
)

func checkSAMLogs(t *testing.T, st *store.Store, entity domain.ID, want []domain.SAMActionLog) []int64 {
	t.Helper()
	return testdb.CheckSAMLogs(t, st, entity, want)
}

// addInChunks adds logs in one import, chunk by chunk: many calls of AddSAMLogs, as a streaming
// import makes.
func addInChunks(t *testing.T, st *store.Store, logs []domain.SAMActionLog, chunk int) {
	t.Helper()
	err := st.Load(context.Background(), func(b *bulkload.Bulk) error {
		for start := 0; start < len(logs); start += chunk {
			if err := b.AddSAMLogs(logs[start:min(start+chunk, len(logs))]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// An entity's logs may come in many calls of AddSAMLogs, in any order (newest first as an export
// writes them, oldest first, or shuffled): every page is exact and the buckets hold what they
// count, none bigger than the most a bucket may hold.
func TestSAMLogsInChunksAnyOrder(t *testing.T) {
	n := 5*bulkload.SAMBucketTarget + 321
	for _, c := range []struct {
		name  string
		order func([]domain.SAMActionLog)
	}{
		{"newest first", func(ls []domain.SAMActionLog) { slices.Reverse(ls) }},
		{"oldest first", func([]domain.SAMActionLog) {}},
		{"shuffled", func(ls []domain.SAMActionLog) {
			r := rand.New(rand.NewPCG(1, 2))
			r.Shuffle(len(ls), func(i, j int) { ls[i], ls[j] = ls[j], ls[i] })
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			testdb.ForEach(t, func(t *testing.T, st *store.Store) {
				testdb.Import(t, st, samBase())
				l1 := samBase().Leads[0].ID
				all := bucketLogs(l1, 0, n)
				file := slices.Clone(all)
				slices.SortFunc(file, func(a, b domain.SAMActionLog) int { return a.ActionDate.Compare(b.ActionDate) })
				c.order(file)
				addInChunks(t, st, file, 777)
				if b := checkSAMLogs(t, st, l1, all); len(b) < n/bulkload.SAMBucketMax {
					t.Errorf("%d buckets for %d logs", len(b), n)
				}
			})
		})
	}
}

// Late logs (older than stored ones) land among the stored ones, alone or by the thousand, and
// split the buckets they grow past the most one holds; removed logs shrink buckets, which join
// or go. Pages stay exact throughout, also across the buckets' bounds, and for an emptied
// entity.
func TestSAMLogsLateAndRemoved(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, samBase())
		l1, l2 := samBase().Leads[0].ID, samBase().Leads[1].ID
		stored := bucketLogs(l1, 0, 4*bulkload.SAMBucketTarget)
		other := bucketLogs(l2, 100_000, 1500)
		addInChunks(t, st, append(slices.Clone(stored), other...), 100_000)
		before := checkSAMLogs(t, st, l1, stored)

		// One late log at a time, each its own import, among the oldest stored ones.
		all := slices.Clone(stored)
		for k := range 5 {
			late := logs(l1, 50_000+k, 1)
			late[0].ActionDate = testdb.SAMT0().Add(time.Duration(k) * time.Second)
			addInChunks(t, st, late, 1)
			all = append(all, late...)
		}
		checkSAMLogs(t, st, l1, all)

		// Thousands of late logs into one stretch: its bucket splits.
		var burst []domain.SAMActionLog
		for k := range 3 * bulkload.SAMBucketTarget {
			l := logs(l1, 60_000+k, 1)[0]
			l.ActionDate = testdb.SAMT0().Add(time.Duration(1000+k%200) * time.Second)
			burst = append(burst, l)
		}
		addInChunks(t, st, burst, 1000)
		all = append(all, burst...)
		if after := checkSAMLogs(t, st, l1, all); len(after) < len(before)+2 {
			t.Errorf("%d buckets before the burst, %d after: none split", len(before), len(after))
		}

		// Removing most logs, some of them the burst's, joins buckets; the other entity is untouched.
		r := rand.New(rand.NewPCG(3, 4))
		r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		gone, kept := all[:len(all)*4/5], all[len(all)*4/5:]
		remove(t, st, gone)

		sizes := checkSAMLogs(t, st, l1, kept)
		for j := range len(sizes) - 1 {
			if sizes[j] < bulkload.SAMBucketMin && sizes[j]+sizes[j+1] <= bulkload.SAMBucketMax {
				t.Errorf("buckets of %v logs: %d and %d were not joined", sizes, j, j+1)
			}
		}
		checkSAMLogs(t, st, l2, other)

		// An emptied entity has no logs and a total of 0, and takes logs again.
		remove(t, st, kept)
		checkSAMLogs(t, st, l1, nil)
		got, total, err := listSAMActionLogs(st, l1, 1, 10)
		if err != nil || len(got) != 0 || total != 0 {
			t.Fatalf("emptied entity: %d logs, total %d, %v", len(got), total, err)
		}
		again := bucketLogs(l1, 200_000, 2500)
		addInChunks(t, st, again, 600)
		checkSAMLogs(t, st, l1, again)
	})
}

// remove removes logs by id in one import, as import --upsert and deletes do.
func remove(t *testing.T, st *store.Store, ls []domain.SAMActionLog) {
	t.Helper()
	ids := make([]domain.ID, len(ls))
	for i := range ls {
		ids[i] = ls[i].ID
	}
	err := st.Load(context.Background(), func(b *bulkload.Bulk) error {
		n, err := b.RemoveSAMLogs(ids)
		if err == nil && n != len(ids) {
			t.Errorf("removed %d logs of %d", n, len(ids))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// import --upsert replaces logs with versions of other dates (older, newer, in another bucket)
// and adds late ones in the same file: pages stay exact and the buckets right.
func TestUpsertSAMLogsAcrossBuckets(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		testdb.Import(t, st, samBase())
		l1 := samBase().Leads[0].ID
		stored := bucketLogs(l1, 0, 3*bulkload.SAMBucketTarget)
		testdb.Import(t, st, &dataset.Dataset{SAMActionLogs: stored})

		var file []domain.SAMActionLog
		all := slices.Clone(stored)
		for k := 0; k < len(all); k += 9 {
			l := all[k]
			l.ActionDate = testdb.SAMT0().Add(time.Duration((k*31)%len(all)) * time.Second) // elsewhere
			l.Action = "corrected"
			all[k] = l
			file = append(file, l)
		}
		for k := range 400 {
			l := logs(l1, 70_000+k, 1)[0]
			l.ActionDate = testdb.SAMT0().Add(time.Duration(k*3) * time.Second)
			all, file = append(all, l), append(file, l)
		}
		rand.New(rand.NewPCG(5, 6)).Shuffle(len(file), func(i, j int) { file[i], file[j] = file[j], file[i] })
		c, err := dataset.ImportWith(ctx, st, &dataset.Dataset{SAMActionLogs: file}, nil, dataset.Options{Upsert: true})
		if err != nil {
			t.Fatal(err)
		}
		if c.Replaced != len(file)-400 || c.Added != 400 {
			t.Errorf("counts %+v", c)
		}
		checkSAMLogs(t, st, l1, all)
		page, _, err := listSAMActionLogs(st, l1, 1, int64(len(all)))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range page {
			if want := all[slices.IndexFunc(all, func(a domain.SAMActionLog) bool { return a.ID == l.ID })]; l != want {
				t.Fatalf("log %s = %+v, want %+v", l.ID, l, want)
			}
		}
	})
}

// BenchmarkAddSAMLogsInChunks imports 1,000,000 logs of one entity into a fresh SQLite store in
// one import, by calls of AddSAMLogs of 50,000 logs each (as a streaming import makes them), in
// the three orders a file may hold: what the buckets cost an import.
//
//	go test ./internal/store -run '^$' -bench AddSAMLogsInChunks -benchtime 1x
func BenchmarkAddSAMLogsInChunks(b *testing.B) {
	const n, chunk = 1_000_000, 50_000
	all := make([]domain.SAMActionLog, n)
	for i := range all {
		all[i] = samLog(10_000_000+i, merchantB, fixtureNow.Add(-time.Duration(n-i)*time.Second))
	}
	for _, c := range []struct {
		name  string
		order func([]domain.SAMActionLog)
	}{
		{"newest first", func(ls []domain.SAMActionLog) { slices.Reverse(ls) }},
		{"oldest first", func([]domain.SAMActionLog) {}},
		{"shuffled", func(ls []domain.SAMActionLog) {
			rand.New(rand.NewPCG(7, 8)).Shuffle(len(ls), func(i, j int) { ls[i], ls[j] = ls[j], ls[i] })
		}},
	} {
		file := slices.Clone(all)
		c.order(file)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				st := testdb.Open(b, "sqlite")
				testdb.Import(b, st, fixture())
				b.StartTimer()
				err := st.Load(context.Background(), func(bk *bulkload.Bulk) error {
					for start := 0; start < n; start += chunk {
						if err := bk.AddSAMLogs(file[start : start+chunk]); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "logs/s")
		})
	}
}
