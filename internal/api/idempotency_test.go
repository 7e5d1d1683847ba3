package api_test

import (
	"crypto/sha256"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"backoffice/internal/api"
	"backoffice/internal/domain"
	"backoffice/internal/gateway"
	"backoffice/internal/push"
	"backoffice/internal/testdb"
)

// idempotent is a harness whose handler runs on a clock the test moves, as a replica would.
type idempotent struct {
	*harness
	clock time.Time
}

func newIdempotent(t *testing.T, h *harness) *idempotent {
	ih := &idempotent{harness: h, clock: fixtureNow}
	now := func() time.Time { return ih.clock }
	srv := httptest.NewServer(h.sim)
	t.Cleanup(srv.Close)
	log := slog.New(slog.NewJSONHandler(h.logs, nil))
	p := push.New(push.Config{Store: h.st, Gateway: gateway.New(gateway.Config{BaseURL: srv.URL, Token: "gw-token", Timeout: 2 * time.Second}),
		Budget: 2 * time.Second, Now: now, Logger: log})
	h.handler = api.New(api.Deps{Store: h.st, Ring: testdb.Ring(t), Pusher: p, Logger: log, Now: now})
	return ih
}

func (h *idempotent) pushWithKey(order, item domain.ID, apiKey string, idempotencyKeys ...string) response {
	h.t.Helper()
	return h.withKeys(http.MethodPost, pushPath(order, item), apiKey, idempotencyKeys)
}

func (h *idempotent) deleteWithKey(merchant, doc domain.ID, apiKey string, idempotencyKeys ...string) response {
	h.t.Helper()
	return h.withKeys(http.MethodDelete, documentPath(merchant, doc), apiKey, idempotencyKeys)
}

// withKeys sends a request with an Idempotency-Key header per key.
func (h *idempotent) withKeys(method, path, apiKey string, idempotencyKeys []string) response {
	h.t.Helper()
	req := httptest.NewRequest(method, path, nil)
	req.Header.Set("Authorization", "Api-Key "+apiKey)
	for _, k := range idempotencyKeys {
		req.Header.Add("Idempotency-Key", k)
	}
	return h.send(req)
}

func (h *idempotent) notes(t *testing.T) int { return len(h.export(t).MerchantNotes) }

// A repeat of a push with the same key by the same user answers the kept status and body, marked
// replayed, without a second gateway call or note; on any replica (here: a second handler on the
// same database), and until the answer expires.
func TestIdempotentPushReplays(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		ih := newIdempotent(t, h)
		first := ih.pushWithKey(orderA, itemOK, partnerAKey, "order-7-retry")
		if first.Status != http.StatusOK || first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first push: %d %s %v", first.Status, first.Body, first.Header)
		}
		replica := newIdempotent(t, h)
		replica.clock = fixtureNow.Add(23 * time.Hour)
		again := replica.pushWithKey(orderA, itemOK, partnerAKey, "order-7-retry")
		if again.Status != first.Status || string(again.Body) != string(first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("repeat: %d %s %v; want the kept answer, replayed", again.Status, again.Body, again.Header)
		}
		if keys := h.sim.Keys(); len(keys) != 1 || ih.notes(t) != 1 {
			t.Fatalf("gateway pushes %v, notes %d; want one of each", keys, ih.notes(t))
		}
		// The gateway saw a key derived from the caller's, not the caller's own.
		if k := h.sim.Keys()[0]; k != push.GatewayKey(userA, "order-7-retry") {
			t.Errorf("gateway key %q", k)
		}
	})
}

// Keys belong to their user: another user's identical key is an independent request, and its
// answer says nothing of the first.
func TestIdempotencyKeysArePerUser(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		ih := newIdempotent(t, h)
		if r := ih.pushWithKey(orderA, itemOK, partnerAKey, "shared-key"); r.Status != http.StatusOK {
			t.Fatalf("first user: %d %s", r.Status, r.Body)
		}
		r := ih.pushWithKey(orderA, itemOK, staffKey, "shared-key")
		if r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("second user: %d %s %v; want a push of its own", r.Status, r.Body, r.Header)
		}
		keys := h.sim.Keys()
		if len(keys) != 2 || keys[0] == keys[1] || ih.notes(t) != 2 {
			t.Fatalf("gateway keys %v, notes %d; want two independent pushes", keys, ih.notes(t))
		}
		// The same key for another line item of the other user is still that user's own business.
		if r := ih.pushWithKey(orderB, itemB, staffKey, "shared-key"); r.Status != http.StatusConflict {
			t.Fatalf("staff reusing its key: %d %s", r.Status, r.Body)
		}
	})
}

// The same key reused by the same user for another line item is refused; so is a repeat while
// the first request runs.
func TestIdempotencyKeyConflicts(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		ih := newIdempotent(t, h)
		if r := ih.pushWithKey(orderA, itemOK, staffKey, "k1"); r.Status != http.StatusOK {
			t.Fatalf("first push: %d %s", r.Status, r.Body)
		}
		wantError(t, ih.pushWithKey(orderB, itemB, staffKey, "k1"), http.StatusConflict, "idempotency_key_reused")
		// A first request still running (claimed, no answer yet), as another replica would hold it.
		if _, err := h.st.ClaimPushKey(t.Context(), staffUser, sha256Of("k2"), itemB, ih.clock, time.Minute); err != nil {
			t.Fatal(err)
		}
		r := ih.pushWithKey(orderB, itemB, staffKey, "k2")
		wantError(t, r, http.StatusConflict, "push_in_progress")
		// The claim's minute is a push's lease: its budget ends 30 s before.
		if got := r.Header.Get("Retry-After"); got != "30" {
			t.Errorf("Retry-After %q, want 30 (the claim's remaining minute, less the 30 s after the budget)", got)
		}
		// Once its claim lapses (the replica died), a repeat runs the push.
		ih.clock = ih.clock.Add(2 * time.Minute)
		if r := ih.pushWithKey(orderB, itemB, staffKey, "k2"); r.Status != http.StatusOK {
			t.Fatalf("repeat after the claim lapsed: %d %s", r.Status, r.Body)
		}
	})
}

// A failed push (502) is kept and replayed like a success: the push was tried and noted. A
// refusal that says nothing about the push (another push of the line item running) is not kept.
func TestIdempotentPushKeepsGatewayFailures(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		h.sim = gateway.NewSimulator(gateway.SimOptions{Token: "gw-token", FailureRate: 1})
		ih := newIdempotent(t, h)
		first := ih.pushWithKey(orderA, itemOK, staffKey, "k-fail")
		wantError(t, first, http.StatusBadGateway, "gateway_unavailable")
		again := ih.pushWithKey(orderA, itemOK, staffKey, "k-fail")
		if again.Status != http.StatusBadGateway || string(again.Body) != string(first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("repeat: %d %s", again.Status, again.Body)
		}
		if n := ih.notes(t); n != 1 {
			t.Fatalf("%d notes, want 1", n)
		}
	})
}

// Kept answers expire after 24 hours: the key then runs anew (and its row is gone).
func TestIdempotentAnswersExpire(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		ih := newIdempotent(t, h)
		first := ih.pushWithKey(orderA, itemOK, staffKey, "k-exp")
		ih.clock = fixtureNow.Add(24*time.Hour + time.Second)
		r := ih.pushWithKey(orderA, itemOK, staffKey, "k-exp")
		if r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "" || ih.notes(t) != 2 {
			t.Fatalf("after expiry: %d %v, %d notes; want a new push", r.Status, r.Header, ih.notes(t))
		}
		// A gateway that honours idempotency still sees one push: the same derived key, the same id.
		var a, b struct{ ID string }
		_ = json.Unmarshal(first.Body, &a)
		_ = json.Unmarshal(r.Body, &b)
		if keys := h.sim.Keys(); len(keys) != 2 || keys[0] != keys[1] {
			t.Fatalf("gateway keys %v", keys)
		}
		notes := h.export(t).MerchantNotes
		id := func(body string) string { return body[strings.LastIndex(body, ": ")+2:] }
		if id(notes[0].Body) != id(notes[1].Body) {
			t.Errorf("gateway push ids differ: %q / %q", notes[0].Body, notes[1].Body)
		}
	})
}

func TestIdempotencyKeySyntax(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		ih := newIdempotent(t, h)
		for name, keys := range map[string][]string{
			"empty":       {""},
			"too long":    {strings.Repeat("k", 256)},
			"not ascii":   {"clé"},
			"control":     {"a\tb"},
			"sent twice":  {"a", "b"},
			"delete char": {"a\x7f"},
		} {
			r := ih.pushWithKey(orderA, itemOK, staffKey, keys...)
			if r.Status != http.StatusBadRequest || !strings.Contains(r.err(t).Detail, "Idempotency-Key") {
				t.Errorf("%s: %d %s", name, r.Status, r.Body)
			}
		}
		if r := ih.pushWithKey(orderA, itemOK, staffKey, strings.Repeat("k", 255)); r.Status != http.StatusOK {
			t.Errorf("255 characters: %d %s", r.Status, r.Body)
		}
		if keys := h.sim.Keys(); len(keys) != 1 {
			t.Errorf("gateway pushes %d; refused keys must push nothing", len(keys))
		}
	})
}

func sha256Of(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// A deletion repeated with its Idempotency-Key by the same user answers 204 again, marked
// replayed, on any replica until the key expires: the caller can tell its own deletion from a
// wrong id, which stays 404. Without the key, or with another user's, a second delete is 404.
func TestIdempotentDeleteReplays(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		ih := newIdempotent(t, h)
		first := ih.deleteWithKey(merchantA, docA1, partnerAKey, "ticket-9-delete")
		if first.Status != http.StatusNoContent || first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first delete: %d %s %v", first.Status, first.Body, first.Header)
		}
		replica := newIdempotent(t, h)
		replica.clock = fixtureNow.Add(23 * time.Hour)
		again := replica.deleteWithKey(merchantA, docA1, partnerAKey, "ticket-9-delete")
		if again.Status != http.StatusNoContent || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("repeat: %d %s %v; want 204, replayed", again.Status, again.Body, again.Header)
		}
		wantError(t, replica.deleteWithKey(merchantA, docA1, partnerAKey), http.StatusNotFound, "not_found")
		wantError(t, replica.deleteWithKey(merchantA, docA1, staffKey, "ticket-9-delete"), http.StatusNotFound, "not_found")
		wantError(t, replica.deleteWithKey(merchantA, id(9999), partnerAKey, "ticket-9-wrong-id"), http.StatusNotFound, "not_found")
		// A day on, the key is forgotten: the repeat is a delete of a document that is gone.
		replica.clock = fixtureNow.Add(25 * time.Hour)
		wantError(t, replica.deleteWithKey(merchantA, docA1, partnerAKey, "ticket-9-delete"), http.StatusNotFound, "not_found")

		// The deletion happened once, and every attempt is in the audit trail.
		var got []string
		for _, e := range h.audit(t, "merchant_document.delete") {
			got = append(got, e.Outcome+" "+e.TargetID+" "+e.Detail)
		}
		want := []string{
			"granted " + docA1.String() + " merchant " + merchantA.String(),
			"granted " + docA1.String() + " merchant " + merchantA.String() + "; replayed (Idempotency-Key)",
			"not_found " + docA1.String() + " merchant " + merchantA.String(),
			"not_found " + docA1.String() + " merchant " + merchantA.String(),
			"not_found " + id(9999).String() + " merchant " + merchantA.String(),
			"not_found " + docA1.String() + " merchant " + merchantA.String(),
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("audit events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

// A deletion's key names one request: the same key for another document, or for a push, is 409
// idempotency_key_reused (and a push's key for a deletion too); a 404 keeps no key, so the key
// can still be used once the id is right; a malformed key is 400 naming the header.
func TestIdempotentDeleteKeyNamesOneRequest(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		ih := newIdempotent(t, h)
		if r := ih.deleteWithKey(merchantA, docA1, staffKey, "k1"); r.Status != http.StatusNoContent {
			t.Fatalf("delete: %d %s", r.Status, r.Body)
		}
		wantError(t, ih.deleteWithKey(merchantA, docA2, staffKey, "k1"), http.StatusConflict, "idempotency_key_reused")
		wantError(t, ih.deleteWithKey(merchantB, docA1, staffKey, "k1"), http.StatusConflict, "idempotency_key_reused")
		wantError(t, ih.pushWithKey(orderA, itemOK, staffKey, "k1"), http.StatusConflict, "idempotency_key_reused")
		if r := ih.pushWithKey(orderA, itemOK, staffKey, "k2"); r.Status != http.StatusOK {
			t.Fatalf("push: %d %s", r.Status, r.Body)
		}
		wantError(t, ih.deleteWithKey(merchantA, docA2, staffKey, "k2"), http.StatusConflict, "idempotency_key_reused")
		// docA2 is still there: nothing was deleted under a reused key.
		wantError(t, ih.deleteWithKey(merchantA, id(9999), staffKey, "k3"), http.StatusNotFound, "not_found")
		if r := ih.deleteWithKey(merchantA, docA2, staffKey, "k3"); r.Status != http.StatusNoContent || r.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("delete with a key whose first use was a 404: %d %s %v", r.Status, r.Body, r.Header)
		}
		for _, bad := range [][]string{{""}, {"a", "b"}, {strings.Repeat("k", 256)}, {"tab\there"}} {
			r := ih.deleteWithKey(merchantA, docB1, staffKey, bad...)
			wantError(t, r, http.StatusBadRequest, "invalid_parameter")
			if e := r.err(t); e.Parameter != "Idempotency-Key" {
				t.Errorf("%q: parameter %q", bad, e.Parameter)
			}
		}
		var reused int
		for _, e := range h.audit(t, "merchant_document.delete") {
			if e.Outcome == domain.OutcomeDenied {
				reused++
			}
		}
		if reused != 3 {
			t.Errorf("%d denied delete events, want the 3 reused keys", reused)
		}
	})
}

// Repeats racing the first request with the same key delete the document once: one answers 204,
// the others replay it (the key's row waits for the first transaction), none answers 404 or 500.
func TestIdempotentDeleteConcurrentRepeats(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		ih := newIdempotent(t, h)
		const n = 8
		results := make(chan response, n)
		for range n {
			go func() {
				req := httptest.NewRequest(http.MethodDelete, documentPath(merchantA, docA1), nil)
				req.Header.Set("Authorization", "Api-Key "+staffKey)
				req.Header.Set("Idempotency-Key", "race")
				rec := httptest.NewRecorder()
				ih.handler.ServeHTTP(rec, req)
				results <- recorded(req, rec)
			}()
		}
		fresh := 0
		for range n {
			r := <-results
			if r.Status != http.StatusNoContent {
				t.Errorf("status %d: %s", r.Status, r.Body)
			}
			if r.Header.Get("Idempotent-Replayed") == "" {
				fresh++
			}
		}
		if fresh != 1 {
			t.Errorf("%d answers not replayed, want 1", fresh)
		}
	})
}
