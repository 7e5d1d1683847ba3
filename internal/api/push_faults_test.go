package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"backoffice/internal/domain"
	"backoffice/internal/push"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// The database refuses the push's note (its disk filled up after the lease and the push record were
// written): the push reaches the gateway, its note is refused, and the caller gets 503. The push
// is not lost: once the database takes the note, the next push of the line item writes it (its
// outcome, which this process knows) beside its own. The store's own tests hold that a full
// database is answered as unavailable (TestSQLiteFullIsUnavailable).
func TestPushWhoseNoteIsRefusedIsNotedLater(t *testing.T) {
	db := &refusedNote{}
	h := newHarness(t, testdb.Open(t, "sqlite"), func(c *push.Config) { db.Store = c.Store; c.Store = db })
	wantError(t, h.push(orderA, itemOK, staffKey), http.StatusServiceUnavailable, "unavailable")
	if n := len(h.sim.Keys()); n != 1 {
		t.Fatalf("the gateway saw %d pushes, want 1", n)
	}
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

// refusedNote is a push's store whose database refuses the first push note (FinishPush) as a full
// one does: nothing written, store.ErrUnavailable.
type refusedNote struct {
	push.Store
	refused atomic.Bool
}

func (s *refusedNote) FinishPush(ctx context.Context, item domain.ID, holder string, note domain.MerchantNote) (bool, error) {
	if s.refused.CompareAndSwap(false, true) {
		return false, fmt.Errorf("database or disk is full: %w", store.ErrUnavailable)
	}
	return s.Store.FinishPush(ctx, item, holder, note)
}
