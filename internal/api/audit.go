package api

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"backoffice/internal/domain"
)

// AuditStore is what reading the audit trail needs.
type AuditStore interface {
	ListAuditEvents(ctx context.Context, f domain.AuditFilter, page, size int64) ([]domain.AuditEvent, int64, error)
	RecordAudit(ctx context.Context, e domain.AuditEvent) error
}

const (
	readAuditAction = "audit_event.read"
	// auditTrailTarget is the target of a read of the audit trail: the trail itself.
	auditTrailTarget = "audit_events"
)

// printableText: valid UTF-8 without control characters, as every action is (a NUL or a byte that
// is not UTF-8 is also what PostgreSQL refuses in a query's text).
func printableText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f })
}

// ParseAuditFilter reads the audit list's filters. actorUserId and targetId are uuids, outcome one
// of the audit outcomes, from and to RFC 3339 times; action is matched exactly. The command line
// (audit list) reads its flags through it too, so both refuse the same values.
func ParseAuditFilter(q url.Values) (domain.AuditFilter, error) {
	var f domain.AuditFilter
	var err error
	if v := q.Get("actorUserId"); q.Has("actorUserId") {
		if f.ActorUserID, err = domain.ParseID(v); err != nil {
			return f, domain.InvalidParameter("actorUserId", "must be a uuid")
		}
	}
	if v := q.Get("targetId"); q.Has("targetId") {
		id, err := domain.ParseID(v)
		if err != nil {
			return f, domain.InvalidParameter("targetId", "must be a uuid")
		}
		f.TargetID = string(id)
	}
	if q.Has("action") {
		if f.Action = q.Get("action"); f.Action == "" {
			return f, domain.InvalidParameter("action", "must not be empty")
		}
		if !printableText(f.Action) {
			return f, domain.InvalidParameter("action", "must be UTF-8 text without control characters")
		}
	}
	if q.Has("outcome") {
		if f.Outcome = q.Get("outcome"); !slices.Contains(domain.AuditOutcomes(), f.Outcome) {
			return f, domain.InvalidParameter("outcome", "must be one of "+strings.Join(domain.AuditOutcomes(), ", "))
		}
	}
	for _, b := range []struct {
		name string
		dst  **time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		if !q.Has(b.name) {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, q.Get(b.name))
		if err != nil {
			return f, domain.InvalidParameter(b.name, "must be an RFC 3339 time such as 2026-11-01T00:00:00Z")
		}
		*b.dst = &t
	}
	return f, nil
}

// handleListAuditEvents answers GET /v1/audit-events. Only staff may read the trail (it names
// every partner's objects), and every authenticated attempt to read it is itself recorded.
func handleListAuditEvents(st AuditStore, now func() time.Time) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, actor domain.Actor) error {
		page, f, err := auditListParams(r, actor)
		event := domain.AuditEvent{At: now(), ActorUserID: actor.UserID, Action: readAuditAction, TargetID: auditTrailTarget,
			Outcome: outcomeOf(err), Detail: auditTarget(r.URL.RawQuery)}
		if err != nil {
			if auditErr := st.RecordAudit(r.Context(), event); auditErr != nil {
				return auditErr
			}
			return err
		}
		events, total, err := st.ListAuditEvents(r.Context(), f, page.Number, page.Size)
		event.Outcome = outcomeOf(err)
		if auditErr := st.RecordAudit(r.Context(), event); auditErr != nil {
			return auditErr
		}
		if err != nil {
			return err
		}
		if events == nil {
			events = []domain.AuditEvent{}
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, List[domain.AuditEvent]{Meta: newMeta(page, total), Data: events})
		return nil
	}
}

// auditListParams checks a read of the trail in the contract's order: parameters (400), then
// permission (403), where a partner's user is refused whatever it holds.
func auditListParams(r *http.Request, actor domain.Actor) (Page, domain.AuditFilter, error) {
	q, err := queryOf(r)
	if err != nil {
		return Page{}, domain.AuditFilter{}, err
	}
	page, err := pageOf(q)
	if err != nil {
		return page, domain.AuditFilter{}, err
	}
	f, err := ParseAuditFilter(q)
	if err != nil {
		return page, f, err
	}
	return page, f, mayReadAuditTrail(actor)
}

// mayReadAuditTrail says why actor may not read the audit trail: only staff users (no partner)
// holding audit_events.read (or *) may.
func mayReadAuditTrail(actor domain.Actor) error {
	if actor.PartnerID != "" {
		return domain.Errorf(domain.KindForbidden, "forbidden", "only staff users (no partner) may read the audit trail")
	}
	return require(actor, domain.PermReadAuditEvents)
}
