package testdb

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"backoffice/internal/auditlog"
	"backoffice/internal/checkpoint"
	"backoffice/internal/store"
)

// SealAsServeDoes builds the audit tree and seals the genesis the migration left unsealed, as
// serve's first start without checkpoints does.
func SealAsServeDoes(t testing.TB, st *store.Store) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.BuildAuditTree(ctx); err != nil {
		t.Fatalf("build the audit tree: %v", err)
	}
	o, err := st.SealUnsealedAuditGenesis(ctx, Ring(t), func() ([]auditlog.ChainExpect, bool, error) { return nil, true, nil })
	if err != nil || (o.Unsealed && !o.Sealed) {
		t.Fatalf("seal the genesis: %+v %v", o, err)
	}
}

// VerifyChain walks the audit chain with the default test ring; head, when not "", is a link
// (hex) the chain must still hold.
func VerifyChain(t testing.TB, st *store.Store, head string) auditlog.ChainReport {
	t.Helper()
	var expects []auditlog.ChainExpect
	if head != "" {
		link, err := hex.DecodeString(head)
		if err != nil {
			t.Fatal(err)
		}
		expects = []auditlog.ChainExpect{{Link: link}}
	}
	rep, err := st.VerifyAuditChain(context.Background(), Ring(t), expects)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// WantIntact fails the test unless rep is an intact, verified chain of events events.
func WantIntact(t testing.TB, rep auditlog.ChainReport, events int64) {
	t.Helper()
	if rep.Break != nil || rep.Unchecked != nil || rep.Events != events || rep.Head.Seq != events || (events > 0 && len(rep.Head.Hash) != 64) {
		t.Fatalf("want an intact chain of %d events: %+v %v %v", events, rep, rep.Break, rep.Unchecked)
	}
	if _, err := rep.Verified(); err != nil {
		t.Fatalf("an intact chain is not verified: %v", err)
	}
}

// Prune removes the events of st's trail below seq below as `audit prune` does once it has
// archived them (the archive is the command's; see internal/app): planned by a walk under the
// default test ring, under a prune note signed with its checkpoint key.
func Prune(t testing.TB, st *store.Store, below int64) {
	t.Helper()
	ctx := context.Background()
	ring := Ring(t)
	plan, _, err := st.PlanAuditPrune(ctx, ring, below, nil)
	if err != nil {
		t.Fatalf("plan the prune: %v", err)
	}
	key, err := ring.CheckpointKey(ring.ActiveKeyID())
	if err != nil {
		t.Fatal(err)
	}
	p, err := checkpoint.SignPrune(checkpoint.Prune{Origin: checkpoint.DefaultOrigin, Below: plan.Below, Root: plan.Root, Link: plan.Link,
		Digest: plan.Digest, KeyID: ring.ActiveKeyID()}, time.Now(), key)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PruneAudit(ctx, plan, p); err != nil {
		t.Fatalf("prune: %v", err)
	}
}
