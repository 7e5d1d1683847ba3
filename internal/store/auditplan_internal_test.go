package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"backoffice/internal/domain"
)

// A page of the audit list, filtered by any one column or none, is read backwards along an index
// that ends in seq: no sort of every match, so OFFSET passes over newer entries only and a deep
// page never reads every older event. SQLite's plan shows it.
func TestAuditListPlansUseSeqIndexes(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, "sqlite:"+t.TempDir()+"/plan.db")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	from := time.Now()
	for _, c := range []struct {
		name  string
		f     domain.AuditFilter
		index string
	}{
		{"none", domain.AuditFilter{}, "audit_events_seq"},
		{"actor", domain.AuditFilter{ActorUserID: domain.SystemActorID}, "audit_events_actor_seq"},
		{"target", domain.AuditFilter{TargetID: "x"}, "audit_events_target_seq"},
		{"action", domain.AuditFilter{Action: "x"}, "audit_events_action_seq"},
		{"outcome", domain.AuditFilter{Outcome: domain.OutcomeDenied}, "audit_events_outcome_seq"},
		{"from", domain.AuditFilter{From: &from}, "audit_events_seq"},
	} {
		where, args := auditWhere(c.f)
		rows, err := st.db.QueryContext(ctx, `EXPLAIN QUERY PLAN `+auditSelect+where+` ORDER BY seq DESC LIMIT ? OFFSET ?`, append(args, 20, 100000)...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		p := strings.Join(plan, "; ")
		if !strings.Contains(p, "INDEX "+c.index+" ") && !strings.HasSuffix(p, "INDEX "+c.index) || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s: plan %q, want a walk of %s with no sort", c.name, p, c.index)
		}
	}
}
