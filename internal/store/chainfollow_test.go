package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// The first follow of a trail, from its genesis, walks it a page at a time with a rest after each
// full page, as later follows do: read in one stretch, a long trail held the server's core for
// seconds 30 s after serve started without a checkpoint file. Every event is still verified.
func TestFollowFromGenesisWalksInPages(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		sealAsServeDoes(t, st)
		const n = 2*store.FollowPage + store.FollowPage/2
		auditEvents(t, st, 0, n)
		rests := store.CountFollowRests(t)
		f, err := st.FollowAuditChain(ctx, testdb.Ring(t), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *rests != 2 {
			t.Errorf("the walk of %d events rested %d times, want 2 (after each full page of %d)", n, *rests, store.FollowPage)
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
	const n = store.FollowPage + 60
	for _, c := range []struct {
		name, stmt string
		seq        int64
		says       func(st *store.Store) string
	}{
		{"an event altered on a later page",
			fmt.Sprintf(`UPDATE audit_events SET detail = 'rewritten' WHERE seq = %d`, store.FollowPage+50),
			store.FollowPage + 50, func(*store.Store) string { return "does not match" }},
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
				sealAsServeDoes(t, st)
				auditEvents(t, st, 0, n)
				sqlExec(t, st, c.stmt)
				f, err := st.FollowAuditChain(ctx, testdb.Ring(t), nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				for range 2 {
					var b *store.ChainBreak
					if _, err := f.Next(ctx); !errors.As(err, &b) || b.Seq != c.seq || !strings.Contains(b.Error(), c.says(st)) {
						t.Fatalf("Next: %v, want a break at seq %d saying %q", err, c.seq, c.says(st))
					}
				}
			})
		})
	}
}
