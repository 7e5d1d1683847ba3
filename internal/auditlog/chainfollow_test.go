package auditlog_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"backoffice/internal/auditlog"
	"backoffice/internal/store"
	"backoffice/internal/testdb"

	"golang.org/x/mod/sumdb/tlog"
)

// The first follow of a trail, from its genesis, walks it a page at a time with a rest after each
// full page, as later follows do: read in one stretch, a long trail would hold the server's core
// once serve started without a checkpoint file. Every event is still verified.
func TestFollowFromGenesisWalksInPages(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.SealAsServeDoes(t, st)
		const n = 2*auditlog.FollowPage + auditlog.FollowPage/2
		auditEvents(t, st, 0, n)
		rests := 0
		f, err := auditlog.FollowAuditChainResting(ctx, st.Trail(), func(context.Context, time.Duration) error {
			rests++
			return nil
		}, testdb.Ring(t), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rests != 2 {
			t.Errorf("the walk of %d events rested %d times, want 2 (after each full page of %d)", n, rests, auditlog.FollowPage)
		}
		v, err := f.Next(ctx)
		if err != nil || v.Seq() != n {
			t.Fatalf("verified up to seq %d (%v), want %d", v.Seq(), err, n)
		}
		auditEvents(t, st, n, 3)
		if v, err := f.Next(ctx); err != nil || v.Seq() != n+3 {
			t.Fatalf("after 3 more: verified up to seq %d (%v), want %d", v.Seq(), err, n+3)
		}
	})
}

// A break the first walk meets, on a later page or in a row no page by seq reads (one without a
// seq), is the follower's, and stays: nothing after it is signed.
func TestFollowFromGenesisFindsBreaks(t *testing.T) {
	const n = auditlog.FollowPage + 60
	for _, c := range []struct {
		name, stmt string
		seq        int64
		says       func(st *store.Store) string
	}{
		{"an event altered on a later page",
			fmt.Sprintf(`UPDATE audit_events SET detail = 'rewritten' WHERE seq = %d`, auditlog.FollowPage+50),
			auditlog.FollowPage + 50, func(*store.Store) string { return "does not match" }},
		{"a row without a number",
			fmt.Sprintf(`INSERT INTO audit_events (id, at, actor_user_id, action, target_id, outcome, detail)
				VALUES ('%s', 1, '%s', 'principal.decrypt', 'x', 'granted', '')`, id(9005), staffUser),
			n + 1, func(st *store.Store) string {
				if st.Engine() == "sqlite" {
					return "no link" // seq is SQLite's rowid: a row given none is numbered next
				}
				return "no sequence number"
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			testdb.ForEach(t, func(t *testing.T, st *store.Store) {
				testdb.SealAsServeDoes(t, st)
				auditEvents(t, st, 0, n)
				sqlExec(t, st, c.stmt)
				f, err := st.FollowAuditChain(ctx, testdb.Ring(t), nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				for range 2 {
					var b *auditlog.ChainBreak
					if _, err := f.Next(ctx); !errors.As(err, &b) || b.Seq != c.seq || !strings.Contains(b.Error(), c.says(st)) {
						t.Fatalf("Next: %v, want a break at seq %d saying %q", err, c.seq, c.says(st))
					}
				}
			})
		})
	}
}

// A walk resumed from a checkpoint takes the tree up to it from the database only as the root the
// checkpoint signed: tree rows altered below it are a break. A checkpoint that signed no tree (the
// format before it) vouches for none, so the walk checks the whole trail, the tree with it.
func TestFollowFromACheckpointChecksItsTree(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.SealAsServeDoes(t, st)
		auditEvents(t, st, 0, 10)
		f, err := st.FollowAuditChain(ctx, testdb.Ring(t), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		v, err := f.Next(ctx)
		if err != nil || v.Seq() != 10 {
			t.Fatalf("verified up to seq %d (%v), want 10", v.Seq(), err)
		}
		size, root := v.Tree()
		link, _ := hex.DecodeString(v.Head())
		note := auditlog.ChainExpect{Seq: size, Link: link, Digest: v.Digest(), Root: root[:], What: "the test's checkpoint"}
		v1 := note
		v1.Root = nil
		for _, base := range []auditlog.ChainExpect{note, v1} {
			f, err := st.FollowAuditChain(ctx, testdb.Ring(t), &base, nil)
			if err != nil {
				t.Fatal(err)
			}
			if v, err := f.Next(ctx); err != nil || v.Seq() != 10 {
				t.Fatalf("from a checkpoint (root %x): verified up to seq %d (%v), want 10", base.Root, v.Seq(), err)
			}
		}
		// A hash on the right edge of the tree of 10 leaves (the subtree of leaves 8 and 9): the
		// root the database now makes of the first 10 events is not the one signed, and a walk that
		// took it on trust would sign a tree grown from it.
		sqlExec(t, st, fmt.Sprintf(`UPDATE audit_tree SET hash = %s WHERE id = %d`, zeroHash(st), tlog.StoredHashIndex(1, 4)))
		for _, base := range []auditlog.ChainExpect{note, v1} {
			f, err := st.FollowAuditChain(ctx, testdb.Ring(t), &base, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Next(ctx); err == nil {
				t.Fatalf("from a checkpoint (root %x): a tree row altered below it verified", base.Root)
			}
		}
	})
}

// zeroHash is a literal of 32 zero bytes in the engine's SQL.
func zeroHash(st *store.Store) string {
	if st.Engine() == "postgres" {
		return `'\x` + strings.Repeat("00", 32) + `'::bytea`
	}
	return `zeroblob(32)`
}

// A walk resumed from a checkpoint meets the rows without a seq (PostgreSQL lets one be
// inserted), as a walk from the genesis does: a break, not a trail verified after the checkpoint.
func TestFollowFromACheckpointFindsRowsWithoutASeq(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		if st.Engine() == "sqlite" {
			t.Skip("seq is SQLite's rowid: a row given none is numbered next")
		}
		testdb.SealAsServeDoes(t, st)
		auditEvents(t, st, 0, 4)
		f, err := st.FollowAuditChain(ctx, testdb.Ring(t), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		v, err := f.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		size, root := v.Tree()
		link, _ := hex.DecodeString(v.Head())
		base := auditlog.ChainExpect{Seq: size, Link: link, Digest: v.Digest(), Root: root[:], What: "the test's checkpoint"}
		sqlExec(t, st, fmt.Sprintf(`INSERT INTO audit_events (id, at, actor_user_id, action, target_id, outcome, detail)
			VALUES ('%s', 1, '%s', 'principal.decrypt', 'x', 'granted', '')`, id(9006), staffUser))
		f, err = st.FollowAuditChain(ctx, testdb.Ring(t), &base, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Next(ctx); err == nil || !strings.Contains(err.Error(), "no sequence number") {
			t.Fatalf("a walk from a checkpoint over a row without a seq: %v, want a break naming it", err)
		}
	})
}
