package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"backoffice/internal/api"
	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

type auditPage struct {
	Meta struct{ Page, PerPage, TotalCount, TotalPages int64 }
	Data []domain.AuditEvent
}

func (h *harness) auditPage(t *testing.T, key, query string) auditPage {
	t.Helper()
	r := h.get("/v1/audit-events?"+query, key)
	if r.Status != http.StatusOK {
		t.Fatalf("audit-events?%s: %d %s", query, r.Status, r.Body)
	}
	if r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q", r.Header.Get("Cache-Control"))
	}
	var p auditPage
	r.decode(t, &p)
	return p
}

// seedAudit records events of two actors on two targets, one per second from fixtureNow.
func (h *harness) seedAudit(t *testing.T) {
	t.Helper()
	for i := range 10 {
		actor, target, outcome := staffUser, principalA, domain.OutcomeGranted
		if i%2 == 1 {
			actor, target, outcome = userA, principalB, domain.OutcomeDenied
		}
		err := h.st.RecordAudit(context.Background(), domain.AuditEvent{At: fixtureNow.Add(time.Duration(i) * time.Second),
			ActorUserID: actor, Action: "principal.decrypt", TargetID: target.String(), Outcome: outcome, Detail: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestAuditEventsNewestFirstAndFiltered(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		h.seedAudit(t)
		p := h.auditPage(t, staffKey, "action=principal.decrypt&size=3&page=2")
		if p.Meta.TotalCount != 10 || p.Meta.TotalPages != 4 || len(p.Data) != 3 {
			t.Fatalf("meta %+v, %d events", p.Meta, len(p.Data))
		}
		if p.Data[0].Detail != "6" || p.Data[2].Detail != "4" || p.Data[0].Seq <= p.Data[1].Seq || len(p.Data[0].Hash) != 64 {
			t.Fatalf("page 2 of 3, newest first: %+v", p.Data)
		}
		for _, c := range []struct {
			query string
			want  int64
		}{
			{"actorUserId=" + userA.String(), 5},
			{"targetId=" + principalA.String(), 5},
			{"outcome=denied", 5},
			{"outcome=denied&actorUserId=" + staffUser.String(), 0},
			{"action=principal.decrypt&from=" + url.QueryEscape(fixtureNow.Add(2*time.Second).Format(time.RFC3339)), 8},
			{"action=principal.decrypt&to=" + url.QueryEscape(fixtureNow.Add(2*time.Second).Format(time.RFC3339)), 2},
			{"from=" + fixtureNow.Add(3*time.Second).Format(time.RFC3339) + "&to=" + fixtureNow.Add(5*time.Second).Format(time.RFC3339), 2},
			{"action=principal.decrypt.other", 0},
		} {
			got := h.auditPage(t, staffKey, c.query)
			if got.Meta.TotalCount != c.want || int64(len(got.Data)) != c.want {
				t.Errorf("%s: total %d, %d events, want %d", c.query, got.Meta.TotalCount, len(got.Data), c.want)
			}
		}
	})
}

func TestAuditEventsBadFilters(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		for query, param := range map[string]string{
			"actorUserId=x":          "actorUserId",
			"targetId=123":           "targetId",
			"outcome=maybe":          "outcome",
			"from=2026-11-01":        "from",
			"to=yesterday":           "to",
			"action=":                "action",
			"page=0":                 "page",
			"size=101":               "size",
			"size=1&outcome=GRANTED": "outcome",
		} {
			r := h.get("/v1/audit-events?"+query, staffKey)
			wantError(t, r, http.StatusBadRequest, "invalid_parameter")
			if e := r.err(t); !strings.Contains(e.Detail, param) {
				t.Errorf("%s: detail %q does not name %s", query, e.Detail, param)
			}
		}
	})
}

// Only staff may read the trail: a partner's user is refused even with every permission, and a
// staff user needs audit_events.read (or *).
func TestAuditEventsPermission(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		reader, plain := id(150), id(151)
		ds := &dataset.Dataset{
			Users: []domain.User{
				{ID: reader, Email: "auditor@example.com", Permissions: []domain.Permission{domain.PermReadAuditEvents}},
				{ID: plain, Email: "ops@example.com", Permissions: []domain.Permission{domain.PermDecryptPrincipals}},
			},
			APIKeys: []domain.APIKey{
				{ID: id(152), UserID: reader, Key: "auditor-key-0000000000001"},
				{ID: id(153), UserID: plain, Key: "ops-key-00000000000000001"},
			},
		}
		if _, err := dataset.Import(context.Background(), h.st, ds, testdb.Ring(t)); err != nil {
			t.Fatal(err)
		}
		wantError(t, h.get("/v1/audit-events", partnerBKey), http.StatusForbidden, "forbidden") // partner, holds *
		wantError(t, h.get("/v1/audit-events", noPermKey), http.StatusForbidden, "forbidden")
		wantError(t, h.get("/v1/audit-events", "ops-key-00000000000000001"), http.StatusForbidden, "forbidden")
		wantError(t, h.do(http.MethodGet, "/v1/audit-events", ""), http.StatusUnauthorized, "unauthenticated")
		h.auditPage(t, "auditor-key-0000000000001", "")
		h.auditPage(t, staffKey, "")
	})
}

// Every authenticated attempt to read the trail is itself in it, whatever its outcome.
func TestAuditEventsReadIsAudited(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		h.get("/v1/audit-events?outcome=granted", staffKey)
		h.get("/v1/audit-events", partnerBKey)
		h.get("/v1/audit-events?from=x", staffKey)
		p := h.auditPage(t, staffKey, "action=audit_event.read")
		var got []string
		for _, e := range p.Data {
			got = append(got, e.Outcome+" "+string(e.ActorUserID)+" "+e.Detail)
		}
		want := []string{
			"invalid " + string(staffUser) + " from=x",
			"denied " + string(userB) + " ",
			"granted " + string(staffUser) + " outcome=granted",
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("reads recorded:\n%q\nwant\n%q", got, want)
		}
	})
}

// failingList is a store whose reads of the trail fail, and whose writes of it do not.
type failingList struct{ *store.Store }

func (failingList) ListAuditEvents(context.Context, domain.AuditFilter, int64, int64) ([]domain.AuditEvent, int64, error) {
	return nil, 0, errors.New("the trail's read failed")
}

// A read of the trail that the store fails is recorded too, denied: the attempt happened.
func TestAuditEventsFailedReadIsAudited(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		deps := h.deps
		deps.Store = failingList{h.st}
		failing := api.New(deps)
		req := httptest.NewRequest(http.MethodGet, "/v1/audit-events?outcome=denied", nil)
		req.Header.Set("Authorization", "Api-Key "+staffKey)
		rec := httptest.NewRecorder()
		failing.ServeHTTP(rec, req)
		if rec.Code != http.StatusInternalServerError {
			t.Fatalf("a failed read of the trail answered %d, want 500", rec.Code)
		}
		p := h.auditPage(t, staffKey, "action=audit_event.read")
		if len(p.Data) == 0 || p.Data[0].Outcome != domain.OutcomeDenied || p.Data[0].Detail != "outcome=denied" {
			t.Fatalf("the failed read is not in the trail as denied: %+v", p.Data)
		}
	})
}

// A NUL or a byte that is not UTF-8 in what a client sends into the trail is refused (a filter) or
// kept as U+FFFD (a decrypt's field), never a 5xx, and never stored as is: PostgreSQL stores no
// NUL, and a trail begun on SQLite must copy there.
func TestAuditTextFromClientsIsStorable(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		for _, q := range []string{"action=%00", "action=%ff", "action=%c3%28", "action=a%01b"} {
			wantError(t, h.get("/v1/audit-events?"+q, staffKey), http.StatusBadRequest, "invalid_parameter")
		}
		wantError(t, h.get(decryptPath(leadA, principalA, "ssn%00"), partnerAKey), http.StatusBadRequest, "unsupported_field")
		p := h.auditPage(t, staffKey, "action=principal.decrypt")
		if len(p.Data) == 0 || p.Data[0].Detail != "field (unsupported, 4 bytes)" {
			t.Fatalf("the decrypt with a NUL in its field: %+v; want its event, the field by its length", p.Data)
		}
	})
}

// A query pair that does not decode (a bad %-escape, a semicolon) is refused naming its
// parameter, on both lists: dropped, it left the defaults in place of what was asked, and the
// audit list without the filter asked for (the whole trail).
func TestMalformedQueryPairsAreRefused(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		for _, c := range []struct{ path, param string }{
			{samPath(string(leadA)) + "?page=%zz", "page"},
			{samPath(string(leadA)) + "?size=5;", "size"},
			{samPath(string(leadA)) + "?size=500;x", "size"},
			{"/v1/audit-events?outcome=%zz", "outcome"},
			{"/v1/audit-events?actorUserId=bad;", "actorUserId"},
			{"/v1/audit-events?%zz=1", "query"},
		} {
			r := h.get(c.path, staffKey)
			wantError(t, r, http.StatusBadRequest, "invalid_parameter")
			if e := r.err(t); e.Parameter != c.param {
				t.Errorf("%s: parameter %q, want %q", c.path, e.Parameter, c.param)
			}
		}
	})
}

// What a client writes in an id's or the field's place on the decrypt route (an SSN, typed into
// the wrong place) is kept in the trail by its length only: the trail keeps what it holds for good,
// and the database holds no plaintext SSN.
func TestAuditKeepsNoClientTextInPlaceOfAnID(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		wantError(t, h.get(decryptPath(leadA, "123-45-6789", "ssn"), partnerAKey), http.StatusBadRequest, "invalid_parameter")
		wantError(t, h.get(decryptPath(leadA, principalA, "123-45-6789"), partnerAKey), http.StatusBadRequest, "unsupported_field")
		p := h.auditPage(t, staffKey, "action=principal.decrypt")
		for _, e := range p.Data {
			if strings.Contains(e.TargetID+e.Detail, "123-45-6789") {
				t.Errorf("the trail keeps what the client wrote in an id's or the field's place: target %q, detail %q", e.TargetID, e.Detail)
			}
		}
		if len(p.Data) < 2 || p.Data[1].TargetID != "(not a uuid, 11 bytes)" || p.Data[0].Detail != "field (unsupported, 11 bytes)" {
			t.Errorf("the two refused decrypts: %+v", p.Data)
		}
	})
}

// Any page number is answered as on the SAM list: a page past the end is an empty page, also the
// largest page a client may ask for, whose offset is far past any trail (it was 500 on PostgreSQL
// and page 1 on SQLite); a page past 2^53-1 is refused on both lists alike.
func TestAuditEventsHugePage(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		h.seedAudit(t)
		p := h.auditPage(t, staffKey, "page=9007199254740991&size=100")
		if len(p.Data) != 0 || p.Meta.Page != 9007199254740991 || p.Meta.TotalCount < 10 {
			t.Fatalf("a page past the end: meta %+v, %d events", p.Meta, len(p.Data))
		}
		audit := h.get("/v1/audit-events?page=4611686018427387905&size=2", staffKey)
		sam := h.get("/v1/crm/sam-action-logs/"+string(leadA)+"?page=4611686018427387905&size=2", staffKey)
		if audit.Status != http.StatusBadRequest || sam.Status != audit.Status {
			t.Fatalf("page past 2^53-1: audit list %d %s, SAM list %d %s", audit.Status, audit.Body, sam.Status, sam.Body)
		}
	})
}
