package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/store/sqltx"
)

// appendDecrypts appends n decrypt events to st's chain, in groups as the audit writer commits.
func appendDecrypts(t *testing.T, st *Store, n int) {
	t.Helper()
	ctx := context.Background()
	at := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	for written := 0; written < n; {
		group := make([]domain.AuditEvent, min(maxAuditGroup, n-written))
		for i := range group {
			group[i] = domain.AuditEvent{At: at.Add(time.Duration(written+i) * time.Millisecond), ActorUserID: domain.SystemActorID,
				Action: "principal.decrypt", TargetID: fmt.Sprint(written + i), Outcome: domain.OutcomeGranted}
		}
		chain := st.chain()
		if err := st.tx(ctx, func(q *sqltx.Tx) error { return chain.Append(ctx, q, group) }); err != nil {
			t.Fatal(err)
		}
		written += len(group)
	}
}

// sealedAuditStore is auditStore with its genesis sealed, as serve seals it when it starts.
func sealedAuditStore(t *testing.T) (*Store, ChainVerifier) {
	t.Helper()
	ctx := context.Background()
	st, ring := auditStore(t)
	rep, err := st.VerifyAuditChain(ctx, ring, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := rep.Verified()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SealAuditGenesis(ctx, v); err != nil {
		t.Fatal(err)
	}
	return st, ring
}

// countRests has restAfterPage count the rests until the test ends.
func countRests(t *testing.T) *int {
	n := new(int)
	restAfterPage = func(ctx context.Context, d time.Duration) error {
		*n++
		return rest(ctx, d)
	}
	t.Cleanup(func() { restAfterPage = rest })
	return n
}

// The first follow of a trail, from its genesis, walks it a page at a time with a rest after each
// full page, as later follows do: read in one stretch, a long trail held the server's core for
// seconds 30 s after serve started without a checkpoint file. Every event is still verified.
func TestFollowFromGenesisWalksInPages(t *testing.T) {
	ctx := context.Background()
	st, ring := sealedAuditStore(t)
	const n = 2*followPage + followPage/2
	appendDecrypts(t, st, n)
	rests := countRests(t)
	f, err := st.FollowAuditChain(ctx, ring, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *rests != 2 {
		t.Errorf("the walk of %d events rested %d times, want 2 (after each full page of %d)", n, *rests, followPage)
	}
	v, err := f.Next(ctx)
	if err != nil || v.Seq() != n {
		t.Fatalf("verified up to seq %d (%v), want %d", v.Seq(), err, n)
	}
	appendDecrypts(t, st, 3)
	if v, err := f.Next(ctx); err != nil || v.Seq() != n+3 {
		t.Fatalf("after 3 more: verified up to seq %d (%v), want %d", v.Seq(), err, n+3)
	}
}

// An event altered on a later page of the first walk is a break at its seq, and stays one.
func TestFollowFromGenesisFindsABreakOnALaterPage(t *testing.T) {
	ctx := context.Background()
	st, ring := sealedAuditStore(t)
	appendDecrypts(t, st, 2*followPage+10)
	const altered = followPage + 50
	if _, err := st.db.ExecContext(ctx, `UPDATE audit_events SET detail = 'rewritten' WHERE seq = ?`, altered); err != nil {
		t.Fatal(err)
	}
	f, err := st.FollowAuditChain(ctx, ring, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		var b *ChainBreak
		if _, err := f.Next(ctx); !errors.As(err, &b) || b.Seq != altered {
			t.Fatalf("Next: %v, want a break at seq %d", err, altered)
		}
	}
}
