package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// The audit trail (package auditlog) on a database an older release migrated, upgraded by this
// one's migrations. The trail's own tests are in internal/auditlog.

// Events an older release wrote are numbered by the upgrade, oldest first, and stay unlinked; the
// chain begins after them, and verify counts them.
func TestMigrationNumbersLegacyAuditEvents(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			st, err := store.Open(ctx, testdb.URL(t, engine))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			st.SetChainSigner(testdb.Ring(t))
			if err := store.MigrateTo(ctx, st, "0003_sam_compact"); err != nil {
				t.Fatal(err)
			}
			// Written out of time order; the numbering follows time (then id).
			for i, sec := range []int{30, 10, 20} {
				err := store.Exec(ctx, st, `INSERT INTO audit_events (id, at, actor_user_id, action, target_id, outcome, detail) VALUES (?, ?, ?, ?, ?, ?, ?)`,
					id(9200+i), fixtureNow.Add(time.Duration(sec)*time.Second).UnixMicro(), staffUser, "principal.decrypt", "x", "granted", fmt.Sprint(sec))
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			testdb.SealAsServeDoes(t, st)
			auditEvents(t, st, 0, 2)
			rep := testdb.VerifyChain(t, st, "")
			testdb.WantIntact(t, rep, 5)
			if rep.Legacy != 3 {
				t.Fatalf("%d legacy events, want 3", rep.Legacy)
			}
			list, total, err := st.ListAuditEvents(ctx, domain.AuditFilter{}, 1, 10)
			if err != nil || total != 5 || len(list) != 5 {
				t.Fatalf("list: %d of %d, %v", len(list), total, err)
			}
			var details []string
			for _, e := range list {
				details = append(details, e.Detail)
			}
			if got := strings.Join(details, ","); got != "field ssn 1,field ssn 0,30,20,10" {
				t.Fatalf("newest first: %s", got)
			}
		})
	}
}

// No false refusal: a database an older release migrated and this one upgraded, with an index
// and statistics an operator added, is what the migrations make.
func TestTrailCatalogOfAnUpgradedDatabase(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			st, exec := oldDatabase(t, engine, "0003_sam_compact")
			st.SetChainSigner(testdb.Ring(t))
			if err := st.Migrate(ctx); err != nil {
				t.Fatalf("upgrade: %v", err)
			}
			exec(`CREATE INDEX audit_events_by_action ON audit_events(action, seq)`)
			exec(`ANALYZE`)
			if err := st.CheckTrailCatalog(ctx); err != nil {
				t.Fatalf("an upgraded database: %v", err)
			}
			if err := st.RecordAudit(ctx, domain.AuditEvent{ActorUserID: testdb.FixtureID(1), Action: "principal.decrypt", TargetID: "p", Outcome: domain.OutcomeGranted, Detail: "field ssn"}); err != nil {
				t.Fatalf("record an event: %v", err)
			}
		})
	}
}

// auditEvents records n events one after another (each its own group), the i-th at second i.
func auditEvents(t *testing.T, st *store.Store, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		err := st.RecordAudit(ctx, domain.AuditEvent{At: fixtureNow.Add(time.Duration(i) * time.Second), ActorUserID: staffUser,
			Action: "principal.decrypt", TargetID: principalA.String(), Outcome: domain.OutcomeGranted, Detail: fmt.Sprint("field ssn ", i)})
		if err != nil {
			t.Fatal(err)
		}
	}
}
