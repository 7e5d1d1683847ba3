package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/secrets"
)

// A group of any size up to the limit is written whole, each event's fields in its own row,
// whatever mix of multi-row statements carries it.
func TestAppendAuditGroupSizes(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, "sqlite:"+t.TempDir()+"/audit.db")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	ring, err := secrets.NewRing(secrets.Key{ID: "k1", Bytes: make([]byte, secrets.KeySize)})
	if err != nil {
		t.Fatal(err)
	}
	st.SetChainSigner(ring)
	at := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	written := 0
	for _, n := range []int{1, 2, 3, 11, 64, 127, maxAuditGroup} {
		group := make([]domain.AuditEvent, n)
		for i := range group {
			group[i] = domain.AuditEvent{At: at.Add(time.Duration(written+i) * time.Second), ActorUserID: domain.SystemActorID,
				Action: "principal.decrypt", TargetID: fmt.Sprint(written + i), Outcome: domain.OutcomeGranted, Detail: fmt.Sprint("d", written+i)}
		}
		if err := st.tx(ctx, func(q querier) error { return st.appendAudit(ctx, q, group) }); err != nil {
			t.Fatalf("group of %d: %v", n, err)
		}
		written += n
	}
	rows, err := st.db.QueryContext(ctx, `SELECT at, target_id, detail FROM audit_events`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[string]bool{}
	for rows.Next() {
		var micros int64
		var target, detail string
		if err := rows.Scan(&micros, &target, &detail); err != nil {
			t.Fatal(err)
		}
		var i int
		fmt.Sscan(target, &i)
		if detail != fmt.Sprint("d", i) || micros != at.Add(time.Duration(i)*time.Second).UnixMicro() {
			t.Errorf("event %s: detail %q, at %d; fields of another event", target, detail, micros)
		}
		seen[target] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != written {
		t.Fatalf("%d events stored, want %d", len(seen), written)
	}
	rep, err := st.VerifyAuditChain(ctx, ring, "")
	if err != nil || rep.Break != nil || rep.Events != int64(written) {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}
