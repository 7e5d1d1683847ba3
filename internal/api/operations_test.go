package api_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"backoffice/internal/api"
	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/testdb"
)

type samLog struct {
	ID         string  `json:"id"`
	EntityID   string  `json:"entityId"`
	Action     string  `json:"action"`
	ActionDate string  `json:"actionDate"`
	SamID      float64 `json:"samId"`
}

type samPage struct {
	Meta struct {
		Page       int64 `json:"page"`
		PerPage    int64 `json:"perPage"`
		TotalCount int64 `json:"totalCount"`
		TotalPages int64 `json:"totalPages"`
	} `json:"meta"`
	Data []samLog `json:"data"`
}

func (h *harness) samPage(t *testing.T, entity domain.ID, query string) samPage {
	t.Helper()
	r := h.get(samPath(entity.String())+query, staffKey)
	if r.Status != http.StatusOK {
		t.Fatalf("%s: status %d: %s", query, r.Status, r.Body)
	}
	var p samPage
	r.decode(t, &p)
	return p
}

// Walking every page, as a client does (until page equals totalPages), yields every log exactly
// once, in order.
func TestSAMLogsWalkEveryPageOnce(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		for _, size := range []int{1, 7, 20, 100} {
			var got []samLog
			for page := 1; ; page++ {
				p := h.samPage(t, leadA, fmt.Sprintf("?page=%d&size=%d", page, size))
				if p.Meta.Page != int64(page) || p.Meta.PerPage != int64(size) || p.Meta.TotalCount != samLogsOnLead {
					t.Fatalf("meta %+v", p.Meta)
				}
				if want := int64((samLogsOnLead + size - 1) / size); p.Meta.TotalPages != want {
					t.Fatalf("totalPages %d, want %d", p.Meta.TotalPages, want)
				}
				got = append(got, p.Data...)
				if p.Meta.Page == p.Meta.TotalPages {
					break
				}
			}
			if len(got) != samLogsOnLead {
				t.Fatalf("size %d: got %d logs, want %d", size, len(got), samLogsOnLead)
			}
			want := slices.Clone(got)
			slices.SortFunc(want, func(a, b samLog) int { // actionDate desc, then id desc
				if c := strings.Compare(b.ActionDate, a.ActionDate); c != 0 {
					return c
				}
				return strings.Compare(b.ID, a.ID)
			})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("size %d: order (-want +got):\n%s", size, diff)
			}
			seen := map[string]bool{}
			for _, l := range got {
				if seen[l.ID] {
					t.Fatalf("log %s twice", l.ID)
				}
				seen[l.ID] = true
			}
		}
	})
}

func TestSAMLogsPagingEdges(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		p := h.samPage(t, leadA, "")
		if p.Meta.Page != 1 || p.Meta.PerPage != 20 || len(p.Data) != 20 || p.Meta.TotalPages != 13 {
			t.Fatalf("defaults: %+v, %d items", p.Meta, len(p.Data))
		}
		first := p.Data[0]
		if first.EntityID != leadA.String() || first.Action == "" || first.ActionDate != "2026-11-21T09:30:00Z" {
			t.Fatalf("first log %+v", first)
		}
		if p := h.samPage(t, leadA, "?page=13"); len(p.Data) != 10 {
			t.Fatalf("last page: %d items", len(p.Data))
		}
		for _, q := range []string{"?page=14", "?page=1000000000000000", "?page=9007199254740991&size=100"} {
			p := h.samPage(t, leadA, q)
			if len(p.Data) != 0 || p.Meta.TotalCount != samLogsOnLead || p.Meta.TotalPages == 0 {
				t.Fatalf("%s: %+v with %d items", q, p.Meta, len(p.Data))
			}
		}
		// An entity with no logs: one (empty) page, so the client rule ends.
		p = h.samPage(t, leadUnconfigured, "")
		if len(p.Data) != 0 || p.Meta.TotalCount != 0 || p.Meta.TotalPages != 1 {
			t.Fatalf("empty entity: %+v", p.Meta)
		}
		if p := h.samPage(t, leadA, "?size=100&other=ignored"); len(p.Data) != 100 {
			t.Fatalf("size=100: %d items", len(p.Data))
		}
		for _, q := range []string{"?page=", "?page=0", "?page=-1", "?page=%2B1", "?page=%201", "?page=1.0", "?page=1e2",
			"?page=abc", "?page=99999999999999999999", "?page=9007199254740992", "?page=9223372036854775807", "?size=", "?size=0", "?size=101", "?size=-5", "?size=2.5", "?size=1e1",
			"?size=%2010", "?size=10%20", "?page=%EF%BC%91"} {
			wantError(t, h.get(samPath(leadA.String())+q, staffKey), http.StatusBadRequest, "invalid_parameter")
		}
	})
}

// Each kind of entity a log can belong to is listable, visible by tenancy.
func TestSAMLogsOfEveryEntityKind(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		for _, e := range []domain.ID{merchantA, orderA, itemOK, id(1000)} {
			r := h.get(samPath(e.String()), partnerAKey)
			var p samPage
			if r.Status != http.StatusOK {
				t.Fatalf("%s: %d %s", e, r.Status, r.Body)
			}
			r.decode(t, &p)
			if p.Meta.TotalCount != 1 || p.Data[0].EntityID != e.String() {
				t.Fatalf("%s: %+v", e, p)
			}
			wantError(t, h.get(samPath(e.String()), partnerBKey), http.StatusNotFound, "not_found")
		}
		// Equipment on no line item belongs to no partner: staff only.
		if r := h.get(samPath(orphanEquipment.String()), staffKey); r.Status != http.StatusOK {
			t.Fatalf("staff on orphan equipment: %d", r.Status)
		}
		wantError(t, h.get(samPath(orphanEquipment.String()), partnerAKey), http.StatusNotFound, "not_found")
	})
}

type acceptance struct {
	MidID      *string `json:"midId"`
	Configured bool    `json:"configured"`
	CardPlans  []struct {
		ID          string  `json:"id"`
		Code        string  `json:"code"`
		DisplayName string  `json:"displayName"`
		SortOrder   float64 `json:"sortOrder"`
		Selected    bool    `json:"selected"`
	} `json:"cardPlans"`
	EBTFcsNumber   *string `json:"ebtFcsNumber"`
	AmexProgram    *string `json:"amexProgram"`
	AmexEsaNumber  *string `json:"amexEsaNumber"`
	EBTBenefitMode *string `json:"ebtBenefitMode"`
}

func TestServiceAcceptance(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		var sa acceptance
		r := h.get("/v1/crm/leads/"+leadA.String()+"/service-acceptance", partnerAKey)
		if r.Status != http.StatusOK {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		r.decode(t, &sa)
		var codes []string
		var selected []string
		for _, p := range sa.CardPlans {
			codes = append(codes, p.Code)
			if p.Selected {
				selected = append(selected, p.Code)
			}
		}
		if diff := cmp.Diff([]string{"visa", "mc", "amex"}, codes); diff != "" {
			t.Errorf("catalogue order (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"visa", "amex"}, selected); diff != "" {
			t.Errorf("selected (-want +got):\n%s", diff)
		}
		if !sa.Configured || *sa.MidID != id(3001).String() || *sa.AmexProgram != "esa" || *sa.AmexEsaNumber != "ESA9" ||
			*sa.EBTFcsNumber != "FCS1" || *sa.EBTBenefitMode != "food_stamps_only" {
			t.Errorf("acceptance %+v", sa)
		}
	})
}

func TestServiceAcceptanceOfAnUnconfiguredLead(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		var sa acceptance
		h.get("/v1/crm/leads/"+leadUnconfigured.String()+"/service-acceptance", staffKey).decode(t, &sa)
		if sa.Configured || sa.MidID != nil || sa.EBTFcsNumber != nil || sa.AmexProgram != nil || sa.AmexEsaNumber != nil || sa.EBTBenefitMode != nil {
			t.Errorf("unconfigured lead: %+v", sa)
		}
		if len(sa.CardPlans) != 3 {
			t.Fatalf("catalogue: %d plans", len(sa.CardPlans))
		}
		for _, p := range sa.CardPlans {
			if p.Selected {
				t.Errorf("plan %s selected", p.Code)
			}
		}
		// A lead with a MID but no stored acceptance shows its MID.
		h.get("/v1/crm/leads/"+leadB.String()+"/service-acceptance", partnerBKey).decode(t, &sa)
		if sa.Configured || sa.MidID == nil || *sa.MidID != id(3002).String() {
			t.Errorf("lead B: %+v", sa)
		}
		wantError(t, h.get("/v1/crm/leads/"+id(999).String()+"/service-acceptance", staffKey), http.StatusNotFound, "not_found")
	})
}

func decryptPath(lead, principal domain.ID, field string) string {
	return "/v1/crm/leads/" + lead.String() + "/principals/" + principal.String() + "/decrypt/" + field
}

func TestDecrypt(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		r := h.get(decryptPath(leadA, principalA, "ssn"), partnerAKey)
		if r.Status != http.StatusOK {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		var got struct {
			SSN string `json:"ssn"`
		}
		r.decode(t, &got)
		if got.SSN != principalSSN {
			t.Fatalf("ssn %q", got.SSN)
		}
		if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("Cache-Control %q", cc)
		}
		wantError(t, h.get(decryptPath(leadA, principalA, "dob"), partnerAKey), http.StatusBadRequest, "unsupported_field")
		wantError(t, h.get(decryptPath(leadA, principalA, "SSN"), partnerAKey), http.StatusBadRequest, "unsupported_field")
		wantError(t, h.get(decryptPath(leadA, principalNoSSN, "ssn"), partnerAKey), http.StatusNotFound, "not_found")
		wantError(t, h.get(decryptPath(leadA, principalB, "ssn"), staffKey), http.StatusNotFound, "not_found") // not under that lead
		wantError(t, h.get(decryptPath(leadB, principalB, "ssn"), partnerAKey), http.StatusNotFound, "not_found")
		wantError(t, h.get(decryptPath(leadA, principalA, "ssn"), noPermKey), http.StatusForbidden, "forbidden")
		if strings.Contains(h.logs.String(), principalSSN) {
			t.Fatal("an SSN reached the log")
		}
	})
}

// Every authenticated decrypt attempt leaves an audit event with its outcome.
func TestDecryptIsAudited(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		attempts := []struct {
			path, key, outcome string
		}{
			{decryptPath(leadA, principalA, "ssn"), partnerAKey, domain.OutcomeGranted},
			{decryptPath(leadA, principalA, "ssn"), noPermKey, domain.OutcomeDenied},
			{decryptPath(leadA, principalNoSSN, "ssn"), partnerAKey, domain.OutcomeNotFound},
			{decryptPath(leadA, principalA, "pin"), partnerAKey, domain.OutcomeInvalid},
			{"/v1/crm/leads/" + leadA.String() + "/principals/bad/decrypt/ssn", partnerAKey, domain.OutcomeInvalid},
		}
		for _, a := range attempts {
			h.get(a.path, a.key)
		}
		h.do(http.MethodGet, decryptPath(leadA, principalA, "ssn"), "") // unauthenticated: no actor, no event
		// The clock is fixed, so compare the events as a set.
		var got []string
		for _, e := range h.audit(t, "principal.decrypt") {
			got = append(got, e.Outcome+" "+string(e.ActorUserID)+" "+e.TargetID)
		}
		slices.Sort(got)
		want := []string{
			domain.OutcomeDenied + " " + string(noPermUser) + " " + principalA.String(),
			domain.OutcomeGranted + " " + string(userA) + " " + principalA.String(),
			domain.OutcomeInvalid + " " + string(userA) + " (not a uuid, 3 bytes)",
			domain.OutcomeInvalid + " " + string(userA) + " " + principalA.String(),
			domain.OutcomeNotFound + " " + string(userA) + " " + principalNoSSN.String(),
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("audit events (-want +got):\n%s", diff)
		}
	})
}

// Each of repeated decrypts is audited: a disclosure is never answered without its own record.
func TestRepeatedDecryptsAreEachAudited(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		const n = 3
		for range n {
			if r := h.get(decryptPath(leadA, principalA, "ssn"), partnerAKey); r.Status != http.StatusOK {
				t.Fatalf("decrypt: %d %s", r.Status, r.Body)
			}
		}
		if got := len(h.audit(t, "principal.decrypt")); got != n {
			t.Fatalf("%d audit events for %d decrypts", got, n)
		}
	})
}

// A change committed before a decrypt, by plain SQL on the database (another replica, psql), is
// what the decrypt acts on, though its reads may come from the read cache: every request's reads
// share one check of the cache made after the request began (the router's, for every route). A
// key revoked refuses it with no disclosure and no granted event, and a user disabled and enabled
// again is refused, then served.
func TestDecryptSeesChangesMadeBeforeIt(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		plain := testdb.SQLOf(t, h.st)
		exec := func(query string) {
			t.Helper()
			if _, err := plain.ExecContext(context.Background(), query); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
		}
		decrypt := func(key string) int {
			t.Helper()
			return h.get(decryptPath(leadA, principalA, "ssn"), key).Status
		}
		for range 2 { // the second from the cache
			if got := decrypt(staffKey); got != http.StatusOK {
				t.Fatalf("before: %d", got)
			}
		}
		exec("UPDATE api_keys SET revoked_at = 1 WHERE id = '" + string(id(111)) + "'")
		if got := decrypt(staffKey); got != http.StatusUnauthorized {
			t.Errorf("with a key revoked before the request: %d, want 401", got)
		}
		granted := 0
		for _, e := range h.audit(t, "principal.decrypt") {
			if e.ActorUserID == staffUser && e.Outcome == domain.OutcomeGranted {
				granted++
			}
		}
		if granted != 2 {
			t.Errorf("%d granted decrypts audited for the staff key, want the 2 before its revocation", granted)
		}

		if got := decrypt(partnerAKey); got != http.StatusOK {
			t.Fatalf("before: %d", got)
		}
		exec("UPDATE users SET disabled = true WHERE id = '" + string(userA) + "'")
		if got := decrypt(partnerAKey); got != http.StatusUnauthorized {
			t.Errorf("with a user disabled before the request: %d, want 401", got)
		}
		exec("UPDATE users SET disabled = false WHERE id = '" + string(userA) + "'")
		if got := decrypt(partnerAKey); got != http.StatusOK {
			t.Errorf("with the user enabled again before the request: %d, want 200", got)
		}
	})
}

// A decrypt after a change to a table it does not depend on (the cache emptied) is answered from
// fresh reads: one attempt, one audit event, its outcome counted once and no audit failure.
func TestDecryptAfterAnUnrelatedChangeIsAuditedOnce(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		outcomes := &outcomeCounts{}
		h.observedBy(outcomes)
		plain := testdb.SQLOf(t, h.st)
		if got := h.get(decryptPath(leadA, principalA, "ssn"), staffKey).Status; got != http.StatusOK {
			t.Fatalf("before: %d", got)
		}
		before := len(h.audit(t, "principal.decrypt"))
		if _, err := plain.ExecContext(context.Background(), "UPDATE leads SET sa_amex_program = 'retail' WHERE id = '"+string(leadA)+"'"); err != nil {
			t.Fatal(err)
		}
		if got := h.get(decryptPath(leadA, principalA, "ssn"), staffKey).Status; got != http.StatusOK {
			t.Fatalf("after an unrelated change: %d, want 200", got)
		}
		if n := len(h.audit(t, "principal.decrypt")) - before; n != 1 {
			t.Errorf("%d audit events for one decrypt, want 1", n)
		}
		if got := outcomes.get(); !slices.Equal(got, []string{domain.OutcomeGranted, domain.OutcomeGranted}) {
			t.Errorf("decrypt outcomes counted %v, want granted twice (once a request)", got)
		}
	})
}

// outcomeCounts is an api.Observer that keeps the decrypt outcomes it was told.
type outcomeCounts struct {
	mu       sync.Mutex
	outcomes []string
}

func (o *outcomeCounts) ObserveRequest(string, string, int, time.Duration) {}

func (o *outcomeCounts) ObserveDecrypt(outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.outcomes = append(o.outcomes, outcome)
}

func (o *outcomeCounts) get() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.outcomes)
}

// audit returns the audit events of an action, oldest first, read through export.
func (h *harness) audit(t *testing.T, action string) []domain.AuditEvent {
	t.Helper()
	ds, err := dataset.Export(context.Background(), h.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []domain.AuditEvent
	for _, e := range ds.AuditEvents {
		if e.Action == action {
			out = append(out, e)
		}
	}
	return out
}

func documentPath(merchant, doc domain.ID) string {
	return "/v1/crm/merchants/" + merchant.String() + "/documents/" + doc.String()
}

func TestDeleteDocument(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		del := func(m, d domain.ID, key string) response {
			return h.do(http.MethodDelete, documentPath(m, d), "Api-Key "+key)
		}
		wantError(t, del(merchantA, docB1, staffKey), http.StatusNotFound, "not_found")    // another merchant's document
		wantError(t, del(merchantB, docB1, partnerAKey), http.StatusNotFound, "not_found") // another partner's
		wantError(t, del(merchantA, docA1, noPermKey), http.StatusForbidden, "forbidden")  // no permission
		wantError(t, del(merchantA, id(9999), staffKey), http.StatusNotFound, "not_found") // unknown
		r := del(merchantA, docA1, partnerAKey)
		if r.Status != http.StatusNoContent || len(r.Body) != 0 {
			t.Fatalf("delete: %d %q", r.Status, r.Body)
		}
		wantError(t, del(merchantA, docA1, partnerAKey), http.StatusNotFound, "not_found") // second delete
		ds, err := dataset.Export(context.Background(), h.st, nil)
		if err != nil {
			t.Fatal(err)
		}
		var left []domain.ID
		for _, d := range ds.MerchantDocuments {
			left = append(left, d.ID)
		}
		if diff := cmp.Diff([]domain.ID{docA2, docB1}, left); diff != "" {
			t.Fatalf("documents left (-want +got):\n%s", diff)
		}
		var granted []domain.AuditEvent
		for _, e := range h.audit(t, "merchant_document.delete") {
			if e.Outcome == domain.OutcomeGranted {
				granted = append(granted, e)
			}
		}
		if len(granted) != 1 || granted[0].TargetID != docA1.String() || granted[0].ActorUserID != userA {
			t.Fatalf("granted delete events: %+v", granted)
		}
	})
}

func TestPanicsBecome500WithTheErrorBody(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		h.handler = api.New(api.Deps{Store: h.st, Ring: testdb.Ring(t), Logger: slog.New(slog.NewJSONHandler(h.logs, nil)),
			Extra: func(mux *http.ServeMux) {
				mux.HandleFunc("GET /boom", func(http.ResponseWriter, *http.Request) { panic("secret cause") })
			}})
		req := httptest.NewRequest(http.MethodGet, "/boom", nil)
		rec := httptest.NewRecorder()
		h.handler.ServeHTTP(rec, req)
		res := response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
		validate(t, req, res)
		wantError(t, res, http.StatusInternalServerError, "internal")
		if strings.Contains(string(res.Body), "secret cause") {
			t.Fatal("the panic value reached the client")
		}
		if !strings.Contains(h.logs.String(), "secret cause") {
			t.Fatal("the panic value did not reach the log")
		}
	})
}
