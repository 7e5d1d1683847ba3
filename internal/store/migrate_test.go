package store_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/store/bulkload"
	"backoffice/internal/testdb"
)

// A database that an older release filled (SAM logs keyed by their text id, before migration
// 0003) keeps its logs through the upgrade: the same pages, the same totals, the same export;
// its ids still count as taken, and later imports still place new logs among the old ones.
func TestMigrationKeepsSAMLogs(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			st, exec := oldDatabase(t, engine, "0002_credentials")
			base := samBase()
			l1, l2 := base.Leads[0].ID, base.Leads[1].ID
			// The old import's rows: text ids, each log at its rank in list order.
			old := map[domain.ID][]domain.SAMActionLog{l1: logs(l1, 0, 250), l2: logs(l2, 1000, 40)}
			for entity, ls := range old {
				slices.Reverse(ls) // stored in no particular order
				rank := map[domain.ID]int{}
				for k, id := range idsInListOrder(ls) {
					rank[id] = k + 1
				}
				for _, l := range ls {
					exec(`INSERT INTO sam_action_logs (id, entity_id, action, action_date, sam_id, pos) VALUES (?, ?, ?, ?, ?, ?)`,
						l.ID, entity, l.Action, l.ActionDate.UnixMicro(), l.SamID, rank[l.ID])
				}
			}

			if err := st.Migrate(ctx); err != nil {
				t.Fatalf("upgrade: %v", err)
			}
			if n, err := st.Pending(ctx); err != nil || n != 0 {
				t.Fatalf("pending after the upgrade = %d, %v", n, err)
			}
			for entity, ls := range old {
				got, total := walk(t, st, entity, 7)
				if !slices.Equal(got, idsInListOrder(ls)) || total != int64(len(ls)) {
					t.Fatalf("entity %s after the upgrade: %d logs, total %d, order right: %v", entity, len(got), total, slices.Equal(got, idsInListOrder(ls)))
				}
				page, _, err := store.ListSAMActionLogs(ctx, st, entity, 2, 3)
				if err != nil || len(page) != 3 {
					t.Fatalf("page 2: %v, %v", page, err)
				}
				want := byID(ls)[page[0].ID]
				if diff := cmp.Diff(want, page[0]); diff != "" {
					t.Errorf("a log after the upgrade (-before +after):\n%s", diff)
				}
			}
			exported := testdb.Export(t, st, nil)
			if got, want := len(exported.SAMActionLogs), 290; got != want {
				t.Fatalf("export after the upgrade: %d logs, want %d", got, want)
			}
			for _, l := range exported.SAMActionLogs {
				if diff := cmp.Diff(byID(old[l.EntityID])[l.ID], l); diff != "" {
					t.Fatalf("exported log (-before +after):\n%s", diff)
				}
			}

			// An id of the old rows is taken...
			dup := logs(l2, 5000, 3)
			dup[1].ID = old[l1][17].ID
			_, err := dataset.Import(ctx, st, &dataset.Dataset{SAMActionLogs: dup}, nil)
			var de *dataset.Error
			if !errors.As(err, &de) || de.Path != "samActionLogs[1].id" || !strings.Contains(de.Problem, "already in the database") {
				t.Fatalf("import of an upgraded log's id: %v", err)
			}
			// ... and new logs take their places among the old ones.
			var more []domain.SAMActionLog
			for k := range 60 {
				l := logs(l1, 2000+k, 1)[0]
				l.ActionDate = old[l1][k*4].ActionDate // the same dates as old logs: ties broken by id
				more = append(more, l)
			}
			if _, err := dataset.Import(ctx, st, &dataset.Dataset{SAMActionLogs: more}, nil); err != nil {
				t.Fatal(err)
			}
			all := append(slices.Clone(old[l1]), more...)
			if got, total := walk(t, st, l1, 11); !slices.Equal(got, idsInListOrder(all)) || total != int64(len(all)) {
				t.Fatalf("after an import on the upgraded database: %d logs, total %d", len(got), total)
			}
		})
	}
}

func byID(ls []domain.SAMActionLog) map[domain.ID]domain.SAMActionLog {
	m := map[domain.ID]domain.SAMActionLog{}
	for _, l := range ls {
		m[l.ID] = l
	}
	return m
}

// A database at migration 0005 (logs keyed by entity and dense position) keeps its logs through
// 0006: the same pages and totals, buckets that count them right (over several buckets), the
// same export order; and a late log then lands among them.
func TestMigrationToSAMBuckets(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			st, exec := oldDatabase(t, engine, "0005_push_idempotency")
			base := samBase()
			l1, l2 := base.Leads[0].ID, base.Leads[1].ID
			// 0005's rows: 16-byte uuids, each log at its rank from the oldest.
			old := map[domain.ID][]domain.SAMActionLog{l1: bucketLogs(l1, 0, 2*bulkload.SAMBucketTarget+345), l2: logs(l2, 100_000, 40)}
			for entity, ls := range old {
				ranked := idsInListOrder(ls)
				slices.Reverse(ranked)
				byID := byID(ls)
				for pos, id := range ranked {
					l := byID[id]
					u, _ := l.ID.Bytes()
					e, _ := entity.Bytes()
					exec(`INSERT INTO sam_action_logs (entity_id, pos, id, action, action_date, sam_id) VALUES (?, ?, ?, ?, ?, ?)`,
						e[:], pos+1, u[:], l.Action, l.ActionDate.UnixMicro(), l.SamID)
					exec(`INSERT INTO sam_action_log_ids (id) VALUES (?)`, u[:])
				}
			}

			if err := st.Migrate(ctx); err != nil {
				t.Fatalf("upgrade: %v", err)
			}
			for entity, ls := range old {
				checkSAMLogs(t, st, entity, ls)
			}
			exported := testdb.Export(t, st, nil)
			var want []domain.ID
			for _, entity := range []domain.ID{l1, l2} { // entities in the order of their bytes
				want = append(want, idsInListOrder(old[entity])...)
			}
			got := make([]domain.ID, len(exported.SAMActionLogs))
			for i, l := range exported.SAMActionLogs {
				got[i] = l.ID
			}
			if !slices.Equal(got, want) {
				t.Fatalf("export after the upgrade: %d logs, in the order of before: false", len(got))
			}

			// A late log lands among the old ones, and an old log is replaced by its id (the ids
			// table says where it is) with another date.
			late := logs(l1, 50_000, 1)
			late[0].ActionDate = testdb.SAMT0().Add(-time.Hour)
			moved := old[l1][100]
			moved.ActionDate = testdb.SAMT0().Add(-2 * time.Hour)
			c, err := dataset.ImportWith(ctx, st, &dataset.Dataset{SAMActionLogs: append(late, moved)}, nil, dataset.Options{Upsert: true})
			if err != nil || c.Added != 1 || c.Replaced != 1 {
				t.Fatalf("upsert after the upgrade: %+v, %v", c, err)
			}
			now := slices.Clone(old[l1])
			now[100] = moved
			checkSAMLogs(t, st, l1, append(now, late...))
		})
	}
}

// oldDatabase opens a database migrated up to version, as an older release left it, with
// samBase's partner and leads in it, and an exec for the rows the test writes as that release did.
func oldDatabase(t *testing.T, engine, version string) (*store.Store, func(query string, args ...any)) {
	t.Helper()
	st, err := store.Open(ctx, testdb.URL(t, engine))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := store.MigrateTo(ctx, st, version); err != nil {
		t.Fatal(err)
	}
	exec := func(query string, args ...any) {
		t.Helper()
		if err := store.Exec(ctx, st, query, args...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	base := samBase()
	exec(`INSERT INTO partners (id, name) VALUES (?, ?)`, base.Partners[0].ID, "P")
	for _, l := range base.Leads {
		exec(`INSERT INTO leads (id, partner_id, business_name) VALUES (?, ?, ?)`, l.ID, l.PartnerID, l.BusinessName)
	}
	return st, exec
}
