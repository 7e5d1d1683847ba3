package auditlog_test

import (
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"backoffice/internal/auditlog"
	"backoffice/internal/checkpoint"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// A prune's transaction refuses a plan the trail moved past (another prune, the event it carries
// on from changed), removing nothing; a plan at or before where the trail starts is nothing to
// prune; a plan past the trail's newest event is refused.
func TestPruneRefusesAMovedPlan(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			st := testdb.Open(t, engine)
			recordPruneEvents(t, st, 1800, 6)
			ring := testdb.Ring(t)
			stale, _, err := st.PlanAuditPrune(ctx, ring, 3, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := st.PlanAuditPrune(ctx, ring, 8, nil); err == nil {
				t.Error("a prune past the newest event was planned")
			}
			testdb.Prune(t, st, 2)
			if _, _, err := st.PlanAuditPrune(ctx, ring, 2, nil); !errors.Is(err, auditlog.ErrNothingToPrune) {
				t.Errorf("a prune where the trail starts: %v, want nothing to prune", err)
			}
			key, _ := ring.CheckpointKey(ring.ActiveKeyID())
			p, err := checkpoint.SignPrune(checkpoint.Prune{Origin: checkpoint.DefaultOrigin, Below: stale.Below, Root: stale.Root, Link: stale.Link,
				Digest: stale.Digest, KeyID: ring.ActiveKeyID()}, time.Now(), key)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.PruneAudit(ctx, stale, p); !errors.Is(err, auditlog.ErrPruneMoved) {
				t.Fatalf("a plan made before another prune: %v, want ErrPruneMoved", err)
			}
			rep := testdb.VerifyChain(t, st, "")
			if rep.PrunedBelow != 2 || rep.Break != nil || rep.Unchecked != nil {
				t.Fatalf("after the refused prune: pruned below %d, %v %v", rep.PrunedBelow, rep.Break, rep.Unchecked)
			}
			other := p
			other.Below = 4
			if err := st.PruneAudit(ctx, stale, other); err == nil {
				t.Error("a note that is not the plan's was recorded")
			}
		})
	}
}

// A prune's transaction reads back what it wrote: a trigger that swallows its record (the events
// deleted with nothing that vouches for it) or its delete makes the prune fail, rolled back, with
// every event still there and the trail intact.
func TestPruneReadsBackItsRecord(t *testing.T) {
	swallow := map[string][]string{
		"sqlite": {
			`CREATE TRIGGER zz BEFORE INSERT ON audit_prune BEGIN SELECT RAISE(IGNORE); END`,
			`CREATE TRIGGER zz BEFORE DELETE ON audit_events BEGIN SELECT RAISE(IGNORE); END`,
		},
		"postgres": {
			`CREATE FUNCTION zz() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$; CREATE TRIGGER zz BEFORE INSERT ON audit_prune FOR EACH ROW EXECUTE FUNCTION zz()`,
			`CREATE FUNCTION zz() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$; CREATE TRIGGER zz BEFORE DELETE ON audit_events FOR EACH ROW EXECUTE FUNCTION zz()`,
		},
	}
	drop := map[string]string{"sqlite": `DROP TRIGGER zz`, "postgres": `DROP FUNCTION zz() CASCADE`}
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			st := testdb.Open(t, engine)
			recordPruneEvents(t, st, 1850, 4)
			ring := testdb.Ring(t)
			plain := testdb.SQLOf(t, st)
			for _, trigger := range swallow[engine] {
				plan, _, err := st.PlanAuditPrune(ctx, ring, 3, nil)
				if err != nil {
					t.Fatal(err)
				}
				key, _ := ring.CheckpointKey(ring.ActiveKeyID())
				p, err := checkpoint.SignPrune(checkpoint.Prune{Origin: checkpoint.DefaultOrigin, Below: plan.Below, Root: plan.Root, Link: plan.Link,
					Digest: plan.Digest, KeyID: ring.ActiveKeyID()}, time.Now(), key)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := plain.ExecContext(ctx, trigger); err != nil {
					t.Fatal(err)
				}
				if err := st.PruneAudit(ctx, plan, p); !errors.Is(err, auditlog.ErrNotLanded) {
					t.Errorf("%s: the prune answered %v, want ErrNotLanded", trigger, err)
				}
				if _, err := plain.ExecContext(ctx, drop[engine]); err != nil {
					t.Fatal(err)
				}
				rep := testdb.VerifyChain(t, st, "")
				if rep.PrunedBelow != 0 || rep.Break != nil || rep.Events != 4 {
					t.Errorf("%s: after the refused prune: pruned below %d, break %v, %d events; want the trail as it was", trigger, rep.PrunedBelow, rep.Break, rep.Events)
				}
			}
		})
	}
}

// The checkpoints given at or below a prune: one at the seq the prune's note fixed must fix the
// same (matched, or a break); one below fixes only pruned events: with a tree root it is left to
// the tree's check, and the report says so; of the format before the tree (no root) it leaves the
// walk unchecked, never intact.
func TestVerifyMeetsCheckpointsAtAndBelowAPrune(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		recordPruneEvents(t, st, 1900, 6)
		ring := testdb.Ring(t)
		plan, _, err := st.PlanAuditPrune(ctx, ring, 4, nil)
		if err != nil {
			t.Fatal(err)
		}
		testdb.Prune(t, st, 4)
		verify := func(x auditlog.ChainExpect) auditlog.ChainReport {
			t.Helper()
			rep, err := st.VerifyAuditChain(ctx, ring, []auditlog.ChainExpect{x})
			if err != nil {
				t.Fatal(err)
			}
			return rep
		}
		link, _ := hex.DecodeString(plan.Link)
		at := auditlog.ChainExpect{Seq: 3, Link: link, Digest: plan.Digest, What: "the checkpoint at the prune"}
		if rep := verify(at); rep.Break != nil || rep.Unchecked != nil || rep.Matched != 1 {
			t.Errorf("a checkpoint at the prune's seq, as its note: break %v, unchecked %v, %d matched; want it matched", rep.Break, rep.Unchecked, rep.Matched)
		}
		other := at
		other.Digest = make([]byte, len(at.Digest))
		if rep := verify(other); rep.Break == nil || !strings.Contains(rep.Break.Reason, "than the prune's note") {
			t.Errorf("a checkpoint at the prune's seq that is not its note's: break %v; want a break naming the note", rep.Break)
		}
		below := auditlog.ChainExpect{Seq: 2, Link: link, Digest: plan.Digest, Root: make([]byte, 32), What: "a checkpoint below the prune"}
		if rep := verify(below); rep.Break != nil || rep.Unchecked != nil || !slices.ContainsFunc(rep.Notes, func(n string) bool {
			return strings.Contains(n, "fix only events pruned below seq 4")
		}) {
			t.Errorf("a checkpoint with a root below the prune: break %v, unchecked %v, notes %q; want intact, its note saying the tree checks it", rep.Break, rep.Unchecked, rep.Notes)
		}
		legacy := below
		legacy.Root = nil
		if rep := verify(legacy); rep.Break != nil || rep.Unchecked == nil || rep.Unchecked.From != 2 {
			t.Errorf("a checkpoint of the format before the tree below the prune: break %v, unchecked %v; want unchecked at seq 2", rep.Break, rep.Unchecked)
		}
	})
}

// recordPruneEvents records n events, their ids from id(first) on.
func recordPruneEvents(t *testing.T, st *store.Store, first, n int) {
	t.Helper()
	for i := range n {
		if err := st.RecordAudit(ctx, domain.AuditEvent{ID: id(first + i), At: time.Now(), ActorUserID: staffUser, Action: "test.prune",
			TargetID: string(principalA), Outcome: domain.OutcomeGranted, Detail: "x"}); err != nil {
			t.Fatal(err)
		}
	}
}

// The newest prune's note signed anew (keys rewrap, under the active key) replaces the one the
// walk checked, read back in its transaction: a trigger that swallows the update fails it, the
// old note left; a note for another cut, or a row changed since the walk, is refused; once in
// place, the trail verifies from it with a ring that lacks the key of the old note.
func TestResignPruneReadsBack(t *testing.T) {
	swallow := map[string]string{
		"sqlite":   `CREATE TRIGGER zz BEFORE UPDATE ON audit_prune BEGIN SELECT RAISE(IGNORE); END`,
		"postgres": `CREATE FUNCTION zz() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$; CREATE TRIGGER zz BEFORE UPDATE ON audit_prune FOR EACH ROW EXECUTE FUNCTION zz()`,
	}
	drop := map[string]string{"sqlite": `DROP TRIGGER zz`, "postgres": `DROP FUNCTION zz() CASCADE`}
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			st := testdb.Open(t, engine)
			recordPruneEvents(t, st, 1850, 4)
			testdb.Prune(t, st, 3)
			both := testdb.Ring(t, "knew", testdb.DefaultKeyID)
			rep, err := st.VerifyAuditChain(ctx, both, nil)
			if err != nil {
				t.Fatal(err)
			}
			v, err := rep.Verified()
			if err != nil {
				t.Fatal(err)
			}
			old, found := v.Prune()
			if !found || old.KeyID != testdb.DefaultKeyID {
				t.Fatalf("the walk's prune: %v %+v", found, old)
			}
			key, _ := both.CheckpointKey("knew")
			resigned, err := checkpoint.SignPrune(checkpoint.Prune{Origin: old.Origin, Below: old.Below, Root: old.Root, Link: old.Link,
				Digest: old.Digest, Archive: old.Archive, KeyID: "knew"}, time.Now(), key)
			if err != nil {
				t.Fatal(err)
			}
			other := old
			other.Archive[0] ^= 1
			if other, err = checkpoint.SignPrune(other, time.Now(), key); err != nil {
				t.Fatal(err)
			}
			if err := st.ResignAuditPrune(ctx, v, other); err == nil {
				t.Error("a note for another archive replaced the prune's")
			}
			plain := testdb.SQLOf(t, st)
			if _, err := plain.ExecContext(ctx, swallow[engine]); err != nil {
				t.Fatal(err)
			}
			if err := st.ResignAuditPrune(ctx, v, resigned); !errors.Is(err, auditlog.ErrNotLanded) {
				t.Errorf("the note signed anew, swallowed by a trigger: %v, want ErrNotLanded", err)
			}
			if _, err := plain.ExecContext(ctx, drop[engine]); err != nil {
				t.Fatal(err)
			}
			if note, _, err := st.AuditPruneNote(ctx); err != nil || string(note) != string(old.Note) {
				t.Fatalf("after the refused update the prune's note is %q (%v), want the old one", note, err)
			}
			if err := st.ResignAuditPrune(ctx, v, resigned); err != nil {
				t.Fatalf("the note signed anew: %v", err)
			}
			if err := st.ResignAuditPrune(ctx, v, resigned); err == nil {
				t.Error("a second replacement over a row changed since the walk went through")
			}
			rep, err = st.VerifyAuditChain(ctx, testdb.Ring(t, "knew"), nil)
			if err != nil || rep.Break != nil || rep.PrunedBelow != 3 {
				t.Fatalf("verified with the new key alone: pruned below %d, break %v, %v", rep.PrunedBelow, rep.Break, err)
			}
		})
	}
}
