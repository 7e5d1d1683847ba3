package testdb

import (
	"context"
	"encoding/hex"
	"testing"

	"backoffice/internal/auditlog"
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
