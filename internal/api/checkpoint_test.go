package api_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"net/http"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"backoffice/internal/api"
	"backoffice/internal/checkpoint"
	"backoffice/internal/domain"
)

// latestNote is a CheckpointSource a test sets.
type latestNote struct {
	mu   sync.Mutex
	note []byte
}

func (l *latestNote) LatestCheckpoint() ([]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.note, l.note != nil
}

// testCheckpoint is a checkpoint of origin test.example/audit, and the key that signed it.
func testCheckpoint(t *testing.T) (checkpoint.Checkpoint, ed25519.PrivateKey) {
	t.Helper()
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	head := checkpoint.Head{Size: 3, Root: tlog.RecordHash([]byte("root")), Digest: bytes.Repeat([]byte{1}, 32)}
	c, err := checkpoint.Sign(head, "test.example/audit", "", time.Now(), "k1", key)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

// GET /v1/audit-log/checkpoint serves the latest signed note as signed, as text, to those who may
// read the trail: 404 with the error body before one is signed, 403 to a partner's user or a user
// without audit_events.read, 401 without credentials; reading it records nothing.
func TestAuditLogCheckpoint(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		src := &latestNote{}
		h.deps.Checkpoints = src
		h.handler = api.New(h.deps)
		const path = "/v1/audit-log/checkpoint"
		wantError(t, h.get(path, staffKey), http.StatusNotFound, "not_found")

		c, key := testCheckpoint(t)
		src.mu.Lock()
		src.note = c.Note
		src.mu.Unlock()
		served := wantNoteServed(t, h, path, c.Note)
		v, _ := checkpoint.Verifier("test.example/audit", key.Public().(ed25519.PublicKey))
		if _, err := note.Open(served, note.VerifierList(v)); err != nil {
			t.Fatalf("the note served does not open: %v", err)
		}
	})
}

// GET /v1/audit-log/pruned serves the newest prune note as signed, as text, to those who may read
// the trail: 404 with the error body before any prune, 403 to a partner's user or a user without
// audit_events.read, 401 without credentials; reading it records nothing.
func TestAuditLogPruned(t *testing.T) {
	h, m := newTreeHarness(t, 3)
	const path = "/v1/audit-log/pruned"
	wantError(t, h.get(path, staffKey), http.StatusNotFound, "not_found")

	c, _ := testCheckpoint(t) // a signed note, as a prune's is
	m.mu.Lock()
	m.pruned = c.Note
	m.mu.Unlock()
	wantNoteServed(t, h, path, c.Note)
}

// wantNoteServed checks that path serves want as signed, as text, never cached, to the staff key
// (HEAD: the headers alone), records nothing in the trail, and refuses a partner's user, a user
// without audit_events.read, no credentials and a POST. It returns the body served.
func wantNoteServed(t *testing.T, h *harness, path string, want []byte) []byte {
	t.Helper()
	_, before, _ := h.st.ListAuditEvents(context.Background(), domain.AuditFilter{}, 1, 1)
	r := h.get(path, staffKey)
	if r.Status != http.StatusOK || !bytes.Equal(r.Body, want) || r.Header.Get("Content-Type") != "text/plain; charset=utf-8" || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %v\n%s", r.Status, r.Header, r.Body)
	}
	if head := h.do(http.MethodHead, path, "Api-Key "+staffKey); head.Status != http.StatusOK || len(head.Body) != 0 {
		t.Fatalf("HEAD: %d %q", head.Status, head.Body)
	}
	if _, after, _ := h.st.ListAuditEvents(context.Background(), domain.AuditFilter{}, 1, 1); after != before {
		t.Fatalf("reading %s recorded %d events", path, after-before)
	}
	wantError(t, h.get(path, partnerBKey), http.StatusForbidden, "forbidden")
	wantError(t, h.get(path, noPermKey), http.StatusForbidden, "forbidden")
	wantError(t, h.do(http.MethodGet, path, ""), http.StatusUnauthorized, "unauthenticated")
	wantError(t, h.do(http.MethodPost, path, "Api-Key "+staffKey), http.StatusMethodNotAllowed, "method_not_allowed")
	return r.Body
}
