package dataset_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// The SAM log helpers of internal/testdb, under the short names these tests use.

func samID(n int) domain.ID     { return testdb.SAMID(n) }
func samBase() *dataset.Dataset { return testdb.SAMBase() }
func logs(entity domain.ID, first, n int) []domain.SAMActionLog {
	return testdb.SAMLogs(entity, first, n)
}
func idsInListOrder(ls []domain.SAMActionLog) []domain.ID { return testdb.IDsInListOrder(ls) }
func walk(t *testing.T, st *store.Store, entity domain.ID, size int64) ([]domain.ID, int64) {
	return testdb.WalkSAMPages(t, st, entity, size)
}

var samT0 = testdb.SAMT0()

// Logs are imported in batches, into a fresh entity and among the stored logs of an entity that
// has some. Either way every page is exactly right.
func TestImportSAMLogsPositions(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		ds := samBase()
		l1, l2 := ds.Leads[0].ID, ds.Leads[1].ID
		// More than one batch, out of order, two entities interleaved in the file.
		first := append(logs(l1, 0, 700), logs(l2, 5000, 300)...)
		slices.Reverse(first[:350])
		ds.SAMActionLogs = first
		if _, err := dataset.Import(ctx, st, ds, nil); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			entity domain.ID
			want   []domain.SAMActionLog
		}{{l1, first[:700]}, {l2, first[700:]}} {
			got, total := walk(t, st, c.entity, 7)
			if !slices.Equal(got, idsInListOrder(c.want)) || total != int64(len(c.want)) {
				t.Fatalf("entity %s: %d logs in the wrong order, total %d", c.entity, len(got), total)
			}
		}
		// A second file adds logs to l1 that interleave with the stored ones.
		var more []domain.SAMActionLog
		for k := range 400 {
			more = append(more, domain.SAMActionLog{ID: samID(10000 + k), EntityID: l1, Action: "board_merchant",
				ActionDate: samT0.Add(time.Duration(k*2) * time.Minute), SamID: int64(k)})
		}
		if _, err := dataset.Import(ctx, st, &dataset.Dataset{SAMActionLogs: more}, nil); err != nil {
			t.Fatal(err)
		}
		all := append(slices.Clone(first[:700]), more...)
		got, total := walk(t, st, l1, 20)
		if !slices.Equal(got, idsInListOrder(all)) || total != int64(len(all)) {
			t.Fatalf("after the second import: %d logs, total %d, order right: %v", len(got), total, slices.Equal(got, idsInListOrder(all)))
		}
	})
}

// A log whose id is already stored is named, in any batch, and nothing of the file is kept.
func TestImportSAMLogsDuplicate(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		ds := samBase()
		l1, l2 := ds.Leads[0].ID, ds.Leads[1].ID
		ds.SAMActionLogs = logs(l1, 0, 10)
		if _, err := dataset.Import(ctx, st, ds, nil); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name   string
			entity domain.ID
			at     int
		}{{"other entity, fresh", l2, 300}, {"same entity, stored", l1, 5}, {"first of a batch", l2, 256}} {
			t.Run(c.name, func(t *testing.T) {
				file := logs(c.entity, 20000, 600)
				file[c.at].ID = samID(3) // stored under l1
				_, err := dataset.Import(ctx, st, &dataset.Dataset{SAMActionLogs: file}, nil)
				var de *dataset.Error
				if !errors.As(err, &de) || de.Path != fmt.Sprintf("samActionLogs[%d].id", c.at) || !strings.Contains(de.Problem, "already in the database") {
					t.Fatalf("error %v", err)
				}
				if got, total := walk(t, st, c.entity, 100); c.entity == l2 && (len(got) != 0 || total != 0) {
					t.Fatalf("a failed import left %d logs", len(got))
				}
			})
		}
		got, total := walk(t, st, l1, 100)
		if !slices.Equal(got, idsInListOrder(logs(l1, 0, 10))) || total != 10 {
			t.Fatalf("l1 after failed imports: %v total %d", got, total)
		}
	})
}

// Logs newer than every stored log of their entity go in after them; any other new logs are
// placed among the stored ones. Either way every page is exactly right, ties of
// date with the newest stored log included.
func TestImportSAMLogsAmongStoredOnes(t *testing.T) {
	// The stored logs are 1000…1099; the newest two, 1098 and 1099, share their date.
	newest := samT0.Add(1098 * time.Minute)
	at := func(more []domain.SAMActionLog, date func(i int) time.Time) []domain.SAMActionLog {
		for i := range more {
			more[i].ActionDate = date(i)
		}
		return more
	}
	for _, c := range []struct {
		name string
		more func(entity domain.ID) []domain.SAMActionLog
	}{
		{"all newer", func(e domain.ID) []domain.SAMActionLog { return logs(e, 2000, 50) }},
		{"newest date, greater ids", func(e domain.ID) []domain.SAMActionLog {
			return at(logs(e, 2000, 30), func(int) time.Time { return newest })
		}},
		{"newest date, a smaller id", func(e domain.ID) []domain.SAMActionLog {
			more := append(logs(e, 999, 1), logs(e, 2000, 20)...) // 999 sorts before 1098 and 1099
			return at(more, func(int) time.Time { return newest })
		}},
		{"all older", func(e domain.ID) []domain.SAMActionLog {
			return at(logs(e, 2000, 40), func(i int) time.Time { return samT0.Add(-time.Duration(i+1) * time.Hour) })
		}},
		{"among them", func(e domain.ID) []domain.SAMActionLog {
			return at(logs(e, 2000, 40), func(i int) time.Time { return samT0.Add(time.Duration(1000+i*3) * time.Minute) })
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			testdb.ForEach(t, func(t *testing.T, st *store.Store) {
				ctx := context.Background()
				ds := samBase()
				l1 := ds.Leads[0].ID
				stored := logs(l1, 1000, 100)
				ds.SAMActionLogs = stored
				if _, err := dataset.Import(ctx, st, ds, nil); err != nil {
					t.Fatal(err)
				}
				more := c.more(l1)
				if _, err := dataset.Import(ctx, st, &dataset.Dataset{SAMActionLogs: more}, nil); err != nil {
					t.Fatal(err)
				}
				all := append(slices.Clone(stored), more...)
				got, total := walk(t, st, l1, 7)
				if !slices.Equal(got, idsInListOrder(all)) || total != int64(len(all)) {
					t.Fatalf("%d logs, total %d, order right: %v", len(got), total, slices.Equal(got, idsInListOrder(all)))
				}
			})
		})
	}
}

// A taken id is found once every row of the file went in, batch after batch, while the next
// batches were being built: the whole import still rolls back. The entity that had logs keeps
// its pages as they were (its counts unchanged), the other gets none, and the ids of the failed file
// stay free: the same file without the taken id imports.
func TestImportSAMLogsFailureLeavesNothing(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		ds := samBase()
		l1, l2 := ds.Leads[0].ID, ds.Leads[1].ID
		ds.SAMActionLogs = logs(l1, 0, 300)
		if _, err := dataset.Import(ctx, st, ds, nil); err != nil {
			t.Fatal(err)
		}
		before, _ := walk(t, st, l1, 50)

		// l1's new logs land among its stored ones, l2 is fresh.
		file := append(logs(l1, 100_000, 2000), logs(l2, 200_000, 3000)...)
		for i := range 2000 {
			file[i].ActionDate = samT0.Add(time.Duration(i%300) * time.Minute)
		}
		taken := 4321
		file[taken].ID = samID(150) // stored under l1
		_, err := dataset.Import(ctx, st, &dataset.Dataset{SAMActionLogs: file}, nil)
		var de *dataset.Error
		if !errors.As(err, &de) || de.Path != fmt.Sprintf("samActionLogs[%d].id", taken) || !strings.Contains(de.Problem, "already in the database") {
			t.Fatalf("error %v", err)
		}
		if got, total := walk(t, st, l1, 50); !slices.Equal(got, before) || total != 300 {
			t.Fatalf("l1 after the failed import: %d logs, total %d, as before: %v", len(got), total, slices.Equal(got, before))
		}
		if got, total := walk(t, st, l2, 50); len(got) != 0 || total != 0 {
			t.Fatalf("l2 after the failed import: %d logs, total %d", len(got), total)
		}

		file = slices.Delete(file, taken, taken+1)
		if _, err := dataset.Import(ctx, st, &dataset.Dataset{SAMActionLogs: file}, nil); err != nil {
			t.Fatalf("the file without the taken id: %v", err)
		}
		all := append(logs(l1, 0, 300), file[:2000]...)
		if got, total := walk(t, st, l1, 50); !slices.Equal(got, idsInListOrder(all)) || total != int64(len(all)) {
			t.Fatalf("l1: %d logs, total %d", len(got), total)
		}
		if got, total := walk(t, st, l2, 50); !slices.Equal(got, idsInListOrder(file[2000:])) || total != int64(len(file)-2000) {
			t.Fatalf("l2: %d logs, total %d", len(got), total)
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
		if _, err := dataset.Import(ctx, st, ds, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(100_000*b.N)/b.Elapsed().Seconds(), "logs/s")
}

// listSAMActionLogs is a page of the entity's logs as staff see them.
func listSAMActionLogs(st *store.Store, entity domain.ID, page, size int64) ([]domain.SAMActionLog, int64, error) {
	logs, total, _, err := st.ListVisibleSAMActionLogs(context.Background(), domain.Scope{}, entity, page, size)
	return logs, total, err
}
