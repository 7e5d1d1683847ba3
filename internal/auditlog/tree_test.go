package auditlog_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"backoffice/internal/auditlog"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
	"backoffice/internal/trail"

	"golang.org/x/mod/sumdb/tlog"
)

// allEvents reads the whole trail, oldest first.
func allEvents(t *testing.T, st *store.Store) []domain.AuditEvent {
	t.Helper()
	n, err := st.AuditTreeSize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events := make([]domain.AuditEvent, n)
	for i := range n {
		if events[i], err = st.AuditEventAt(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	return events
}

// independentTree is the trail's tree as an auditor computes it from the events alone: each
// leaf made with the ring's subject tags, the stored hashes with tlog in memory.
func independentTree(t *testing.T, events []domain.AuditEvent) ([][]byte, []tlog.Hash) {
	t.Helper()
	ring := testdb.Ring(t)
	var leaves [][]byte
	var stored []tlog.Hash
	r := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = stored[x]
		}
		return out, nil
	})
	for i, e := range events {
		var tag []byte
		if e.ChainKeyID != "" {
			var err error
			if tag, err = ring.SubjectTag(e.ChainKeyID, e.TargetID); err != nil {
				t.Fatal(err)
			}
		}
		leaf := trail.Leaf(tag, e)
		hs, err := tlog.StoredHashes(int64(i), leaf, r)
		if err != nil {
			t.Fatal(err)
		}
		leaves, stored = append(leaves, leaf), append(stored, hs...)
	}
	return leaves, stored
}

// wantTree checks that the stored tree is the one the events make: its size, every stored hash,
// the leaves, the root, and the events at their indexes.
func wantTree(t *testing.T, st *store.Store, events int64) {
	t.Helper()
	n, err := st.AuditTreeSize(ctx)
	if err != nil || n != events {
		t.Fatalf("tree size %d %v, want %d", n, err, events)
	}
	all := allEvents(t, st)
	leaves, stored := independentTree(t, all)
	idx := make([]int64, len(stored))
	for i := range idx {
		idx[i] = int64(i)
	}
	got, err := st.ReadAuditHashes(ctx, idx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range stored {
		if got[i] != stored[i] {
			t.Fatalf("stored hash %d is %v, want %v", i, got[i], stored[i])
		}
	}
	gotLeaves, err := st.AuditLeaves(ctx, 0, n)
	if err != nil || len(gotLeaves) != len(leaves) {
		t.Fatalf("AuditLeaves: %d %v, want %d", len(gotLeaves), err, len(leaves))
	}
	for i := range leaves {
		if !bytes.Equal(gotLeaves[i], leaves[i]) {
			t.Fatalf("leaf %d differs", i)
		}
	}
	want, err := tlog.TreeHash(n, tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = stored[x]
		}
		return out, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	root, err := tlog.TreeHash(n, st.AuditHashReader(ctx))
	if err != nil || root != want {
		t.Fatalf("stored root %v %v, want %v", root, err, want)
	}
	for i, e := range all {
		got, index, err := st.AuditEventIndex(ctx, e.ID)
		if err != nil || index != int64(i) || got.Seq != e.Seq {
			t.Fatalf("AuditEventIndex(%s) = %d %v, want %d", e.ID, index, err, i)
		}
	}
}

// recordConcurrently records n events from n goroutines at once (the group writer's groups).
func recordConcurrently(t *testing.T, st *store.Store, from, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := from; i < from+n; i++ {
		wg.Go(func() {
			errs <- st.RecordAudit(ctx, domain.AuditEvent{At: fixtureNow.Add(time.Duration(i) * time.Second), ActorUserID: staffUser,
				Action: "principal.decrypt", TargetID: fmt.Sprintf("prn_%d", i%7), Outcome: domain.OutcomeGranted, Detail: "field ssn"})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Every append, alone or in the group writer's groups, adds its events' leaves and the tree's
// stored hashes: the stored tree is the one tlog computes from the events and their subject tags.
func TestAuditTreeIsTheEventsLeaves(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		wantTree(t, st, 0)
		auditEvents(t, st, 0, 3)
		wantTree(t, st, 3)
		recordConcurrently(t, st, 3, 200)
		auditEvents(t, st, 203, 2)
		recordConcurrently(t, st, 205, 60)
		wantTree(t, st, 265)
		if _, err := st.AuditLeaves(ctx, 260, 266); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("leaves past the tree: %v, want ErrNotFound", err)
		}
		if _, err := st.ReadAuditHashes(ctx, []int64{tlog.StoredHashCount(265)}); !errors.Is(err, auditlog.ErrTree) {
			t.Fatalf("a hash past the tree: %v, want ErrAuditTree", err)
		}
		if _, err := st.AuditEventAt(ctx, 265); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("an event past the tree: %v, want ErrNotFound", err)
		}
		testdb.WantIntact(t, testdb.VerifyChain(t, st, ""), 265)
	})
}

// Several replicas appending to one PostgreSQL database at once keep one tree.
func TestAuditTreeOfReplicas(t *testing.T) {
	for _, engine := range testdb.PostgresEngines() {
		t.Run(engine, func(t *testing.T) {
			url := testdb.URL(t, engine)
			a, b, c := testdb.OpenURL(t, url), testdb.OpenURL(t, url), testdb.OpenURL(t, url)
			var wg sync.WaitGroup
			for i, st := range []*store.Store{a, b, c} {
				wg.Go(func() {
					for round := range 5 {
						recordConcurrently(t, st, 1000*i+100*round, 20)
						auditEvents(t, st, 1000*i+100*round+50, 1)
					}
				})
			}
			wg.Wait()
			wantTree(t, a, 315)
			testdb.WantIntact(t, testdb.VerifyChain(t, b, ""), 315)
		})
	}
}

// A database whose events were written before the tree (an upgrade) gets its tree when a store
// is opened with the ring, in batches; one stopped midway (its newest rows gone: a batch never
// committed) is completed; a complete one is left as it is. Until then nothing is appended.
func TestAuditTreeBuiltForEventsWrittenBeforeIt(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		auditEvents(t, st, 0, 40)
		recordConcurrently(t, st, 40, 30)
		sqlExec(t, st, `DELETE FROM audit_tree`)
		// Verify before the tree is built: the tree is unchecked, not broken.
		if rep := testdb.VerifyChain(t, st, ""); rep.Break != nil || rep.Unchecked == nil || rep.Unchecked.From != 1 || !strings.Contains(rep.Unchecked.Error(), "does not hold these events yet") {
			t.Fatalf("verify of a trail without its tree: %v %v, want unchecked from seq 1", rep.Break, rep.Unchecked)
		}
		if err := st.RecordAudit(ctx, domain.AuditEvent{At: fixtureNow, ActorUserID: staffUser, Action: "principal.decrypt", TargetID: "x", Outcome: "granted"}); !errors.Is(err, auditlog.ErrTree) {
			t.Fatalf("append onto a trail without its tree: %v, want ErrAuditTree", err)
		}
		if n, err := st.BuildAuditTree(ctx); err != nil || n != 70 {
			t.Fatalf("BuildAuditTree = %d %v, want 70", n, err)
		}
		wantTree(t, st, 70)
		// Stopped after 33 leaves.
		sqlExec(t, st, fmt.Sprintf(`DELETE FROM audit_tree WHERE id >= %d`, tlog.StoredHashCount(33)))
		if rep := testdb.VerifyChain(t, st, ""); rep.Break != nil || rep.Unchecked == nil || rep.Unchecked.From != 34 {
			t.Fatalf("verify of a tree built to seq 33: %v %v, want unchecked from seq 34", rep.Break, rep.Unchecked)
		}
		if n, err := st.BuildAuditTree(ctx); err != nil || n != 37 {
			t.Fatalf("BuildAuditTree = %d %v, want 37", n, err)
		}
		if n, err := st.BuildAuditTree(ctx); err != nil || n != 0 {
			t.Fatalf("BuildAuditTree of a whole tree = %d %v, want 0", n, err)
		}
		auditEvents(t, st, 70, 3)
		wantTree(t, st, 73)
	})
}

// A tree row deleted under the writer: the next append fails closed (the caller is answered
// unavailable, so no SSN), through the group writer's one statement and the locked append alike.
func TestAuditTreeRowDeletedFailsTheNextAppend(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		auditEvents(t, st, 0, 6)
		sqlExec(t, st, fmt.Sprintf(`DELETE FROM audit_tree WHERE id = %d`, tlog.StoredHashIndex(2, 0))) // on the right edge of 6 leaves
		for range 2 {
			err := st.RecordAudit(ctx, domain.AuditEvent{At: fixtureNow, ActorUserID: staffUser, Action: "principal.decrypt", TargetID: "x", Outcome: "granted"})
			if !errors.Is(err, auditlog.ErrTree) || !errors.Is(err, store.ErrUnavailable) {
				t.Fatalf("append onto a tree missing a row: %v, want ErrAuditTree", err)
			}
		}
		if n, err := st.AuditTreeSize(ctx); err != nil || n != 6 {
			t.Fatalf("tree size %d %v: a failed append wrote", n, err)
		}
	})
}

// A tree row written far past the tree's end (by hand): the next append fails closed, through the
// group writer's one statement and the locked append alike, where it passed unseen (only a row
// right after the end was met) and the tree then held more leaves than the trail.
func TestAuditTreeRowFarPastTheEndFailsTheNextAppend(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		auditEvents(t, st, 0, 6)
		sqlExec(t, st, `INSERT INTO audit_tree (id, hash) SELECT max(id) + 1000, `+blob(st, strings.Repeat("ab", 32))+` FROM audit_tree`)
		for range 2 {
			err := st.RecordAudit(ctx, domain.AuditEvent{At: fixtureNow, ActorUserID: staffUser, Action: "principal.decrypt", TargetID: "x", Outcome: "granted"})
			if !errors.Is(err, store.ErrUnavailable) {
				t.Fatalf("append onto a tree with a row far past its end: %v, want it refused, unavailable", err)
			}
		}
		if n, err := auditlog.Count(ctx, st.Trail(), "audit_events"); err != nil || n != 6 {
			t.Fatalf("%d events, %v: a refused append wrote", n, err)
		}
	})
}

// rootOf is tlog's root of the tree the events make.
func rootOf(t *testing.T, events []domain.AuditEvent) tlog.Hash {
	t.Helper()
	_, stored := independentTree(t, events)
	root, err := tlog.TreeHash(int64(len(events)), tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = stored[x]
		}
		return out, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// The walk (audit verify, the checkpoint signer's follower) checks the tree beside the chain:
// what it verified names the tree's head, and an altered tree row or subject tag is a break at
// the event that wrote it.
func TestAuditTreeCheckedByTheWalk(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		auditEvents(t, st, 0, 6)
		recordConcurrently(t, st, 6, 1100) // more than a page of the walk
		want := rootOf(t, allEvents(t, st))
		v, err := testdb.VerifyChain(t, st, "").Verified()
		if err != nil {
			t.Fatal(err)
		}
		if size, root := v.Tree(); size != 1106 || root != want {
			t.Fatalf("verified tree %d %v, want 1106 %v", size, root, want)
		}
		f, err := st.FollowAuditChain(ctx, testdb.Ring(t), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := f.Next(ctx); err != nil {
			t.Fatal(err)
		} else if size, root := v.Tree(); size != 1106 || root != want {
			t.Fatalf("followed tree %d %v, want 1106 %v", size, root, want)
		}
		other := strings.Repeat("ab", 32)
		for _, c := range []struct {
			name, query string
			seq         int64
			says        string
		}{
			{"a leaf's stored hash", fmt.Sprintf(`UPDATE audit_tree SET hash = %s WHERE id = %d`, blob(st, other), tlog.StoredHashIndex(0, 3)), 4, "its leaf in the audit tree"},
			{"a subject tag", fmt.Sprintf(`UPDATE audit_tree SET subject_tag = %s WHERE id = %d`, blob(st, other), tlog.StoredHashIndex(0, 2)), 3, "subject tag"},
			{"an upper stored hash", fmt.Sprintf(`UPDATE audit_tree SET hash = %s WHERE id = %d`, blob(st, other), tlog.StoredHashIndex(2, 0)), 4, "is not the hash of the ones below it"},
			{"a stored hash of a later page", fmt.Sprintf(`UPDATE audit_tree SET hash = %s WHERE id = %d`, blob(st, other), tlog.StoredHashIndex(0, 1050)), 1051, "its leaf in the audit tree"},
			{"a leaf's row", fmt.Sprintf(`DELETE FROM audit_tree WHERE id = %d`, tlog.StoredHashIndex(0, 4)), 5, "not in the audit tree"},
		} {
			t.Run(c.name, func(t *testing.T) {
				backup := `CREATE TABLE tree_backup AS SELECT * FROM audit_tree`
				sqlExec(t, st, backup)
				defer func() {
					sqlExec(t, st, `DELETE FROM audit_tree`)
					sqlExec(t, st, `INSERT INTO audit_tree SELECT * FROM tree_backup`)
					sqlExec(t, st, `DROP TABLE tree_backup`)
				}()
				sqlExec(t, st, c.query)
				wantBreak(t, testdb.VerifyChain(t, st, ""), c.seq, c.says)
				f, err := st.FollowAuditChain(ctx, testdb.Ring(t), nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				var b *auditlog.ChainBreak
				if _, err := f.Next(ctx); !errors.As(err, &b) || b.Seq != c.seq {
					t.Fatalf("follower: %v, want a break at seq %d", err, c.seq)
				}
			})
		}
		testdb.WantIntact(t, testdb.VerifyChain(t, st, ""), 1106)
	})
}

// The tree of events written before it is built under the keys they were linked under: a ring
// that no longer holds one refuses, naming the key and what to do, and builds once it is back.
func TestAuditTreeBuildNamesARetiredKey(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		auditEvents(t, st, 0, 5)
		sqlExec(t, st, `DELETE FROM audit_tree`)
		st.SetChainSigner(testdb.Ring(t, "knew"))
		_, err := st.BuildAuditTree(ctx)
		if err == nil || !strings.Contains(err.Error(), `"`+testdb.DefaultKeyID+`"`) || !strings.Contains(err.Error(), "put it back in the ring") {
			t.Fatalf("BuildAuditTree without the events' key: %v, want an error naming key %q and what to do", err, testdb.DefaultKeyID)
		}
		if n, err := st.AuditTreeSize(ctx); err != nil || n != 0 {
			t.Fatalf("tree size %d %v after a refused build, want 0", n, err)
		}
		st.SetChainSigner(testdb.Ring(t, "knew", testdb.DefaultKeyID))
		if n, err := st.BuildAuditTree(ctx); err != nil || n != 5 {
			t.Fatalf("BuildAuditTree with the key back = %d %v, want 5", n, err)
		}
		wantTree(t, st, 5)
	})
}
