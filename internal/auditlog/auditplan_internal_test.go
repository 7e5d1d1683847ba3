package auditlog

import (
	"context"
	"strings"
	"testing"
	"time"

	"backoffice/internal/domain"
)

// A page of the audit list is read backwards along an index that ends in seq (the actor and
// target filters) or the table itself (seq is its rowid): never a sort of every match, so OFFSET
// passes over newer entries only. SQLite's plan shows it.
func TestAuditListPlansUseSeqIndexes(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t, "plan.db")
	from := time.Now()
	for _, c := range []struct {
		name  string
		f     domain.AuditFilter
		index string
	}{
		{"none", domain.AuditFilter{}, ""},
		{"actor", domain.AuditFilter{ActorUserID: domain.SystemActorID}, "audit_events_actor_seq"},
		{"target", domain.AuditFilter{TargetID: "x"}, "audit_events_target_seq"},
		{"action", domain.AuditFilter{Action: "x"}, ""},
		{"outcome", domain.AuditFilter{Outcome: domain.OutcomeDenied}, ""},
		{"actor and action", domain.AuditFilter{ActorUserID: domain.SystemActorID, Action: "x"}, "audit_events_actor_seq"},
		{"from", domain.AuditFilter{From: &from}, ""},
	} {
		where, args := auditWhere(c.f)
		rows, err := d.db.QueryContext(ctx, `EXPLAIN QUERY PLAN `+auditSelect+where+` ORDER BY seq DESC LIMIT ? OFFSET ?`, append(args, 20, 100000)...)
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
		want := "SEARCH audit_events USING INDEX " + c.index + " "
		if c.index == "" {
			want = "SCAN audit_events" // the table itself, in rowid (seq) order
		}
		if !strings.HasPrefix(p, want) || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s: plan %q, want a walk of %s with no sort", c.name, p, c.index)
		}
	}
}
