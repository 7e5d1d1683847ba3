package api_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// The database's disk is full (max_page_count) where the notes go, while the lease and the push
// record still fit in pages they have: the push reaches the gateway, its note is refused, and the
// caller gets 503. The push is not lost: once the database has room, the next push of the line
// item writes its note (its outcome, which this process knows) beside its own.
func TestPushIntoAFullDatabaseIsNotedLater(t *testing.T) {
	h := newHarness(t, testdb.Open(t, "sqlite"))
	ctx := context.Background()
	testdb.CapPages(t, h.st, 1)
	filler := domain.MerchantNote{MerchantID: merchantA, Body: "filler", CreatedAt: fixtureNow, CreatedBy: staffUser}
	for refused := 0; refused < 50; { // until no note fits in any page the notes have
		if err := h.st.AddMerchantNote(ctx, filler); errors.Is(err, store.ErrUnavailable) {
			refused++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	wantError(t, h.push(orderA, itemOK, staffKey), http.StatusServiceUnavailable, "unavailable")
	if n := len(h.sim.Keys()); n != 1 {
		t.Fatalf("the gateway saw %d pushes, want 1", n)
	}
	testdb.CapPages(t, h.st, 1<<30)
	if r := h.push(orderA, itemOK, staffKey); r.Status != http.StatusOK {
		t.Fatalf("push once there is room: %d %s", r.Status, r.Body)
	}
	var notes []string
	for _, n := range h.export(t).MerchantNotes {
		if strings.HasPrefix(n.Body, "Device parameter push") {
			notes = append(notes, n.Body)
		}
	}
	// This process knew the refused push's outcome: its note says it, with the gateway's push id.
	if len(notes) != 2 || notes[0] == notes[1] || !strings.Contains(notes[0], "succeeded after 1 attempt(s)") || !strings.Contains(notes[1], "succeeded after 1 attempt(s)") {
		t.Fatalf("push notes %q: want the refused push's and the second's", notes)
	}
}
