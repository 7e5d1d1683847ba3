package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// A claimed key's answer is kept until it expires; expired keys are deleted by the next claim of
// any key, and a lapsed claim that never finished is taken over once.
func TestPushKeysExpireAndAreCleanedUp(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		if err := st.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		user, item := domain.ID("00000000-0000-4000-8000-000000000101"), domain.ID("00000000-0000-4000-8000-000000001101")
		t0 := time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)
		claim := func(key string, at time.Time) domain.KeyState {
			t.Helper()
			c, err := st.ClaimPushKey(ctx, user, []byte(key), item, at, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			return c.State
		}
		if s := claim("a", t0); s != domain.KeyNew {
			t.Fatalf("first claim: %v", s)
		}
		if err := st.FinishPushKey(ctx, user, []byte("a"), 200, []byte(`{}`), t0.Add(24*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if s := claim("a", t0.Add(time.Hour)); s != domain.KeyDone {
			t.Fatalf("claim of a finished key: %v", s)
		}
		if s := claim("b", t0); s != domain.KeyNew {
			t.Fatalf("claim b: %v", s)
		}
		if s := claim("b", t0.Add(30*time.Second)); s != domain.KeyRunning {
			t.Fatalf("claim of a running key: %v", s)
		}
		if s := claim("b", t0.Add(2*time.Minute)); s != domain.KeyNew {
			t.Fatalf("claim of a lapsed key: %v", s)
		}
		if n, err := store.Count(ctx, st, "push_idempotency"); err != nil || n != 2 {
			t.Fatalf("%d keys (%v), want 2", n, err)
		}
		// A day on, a claim of another key deletes both expired ones.
		if s := claim("c", t0.Add(25*time.Hour)); s != domain.KeyNew {
			t.Fatalf("claim c: %v", s)
		}
		if n, err := store.Count(ctx, st, "push_idempotency"); err != nil || n != 1 {
			t.Fatalf("%d keys after expiry (%v), want only the new one", n, err)
		}
	})
}

// A deletion under a key keeps the key exactly when the deletion commits: an audit event that
// cannot be written rolls back the deletion and the key (a retry runs anew), a deletion that
// finds nothing keeps no key, a kept key replays, and a key its user holds for a push, running or
// done, is refused for a deletion.
func TestDeleteUnderAKey(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.Import(t, st, fixture())
		staff := domain.Scope{}
		n := 9200
		event := func() domain.AuditEvent {
			n++
			return domain.AuditEvent{ID: id(n), At: fixtureNow, ActorUserID: staffUser, Action: "merchant_document.delete", TargetID: string(docA1), Detail: "test"}
		}
		key := func(k string) domain.KeyUse {
			return domain.KeyUse{User: staffUser, Hash: []byte(k), Now: fixtureNow, KeepUntil: fixtureNow.Add(24 * time.Hour)}
		}
		taken := domain.AuditEvent{ID: id(1601), At: fixtureNow, ActorUserID: staffUser, Action: "merchant_document.delete"}
		if _, err := st.DeleteMerchantDocumentOnce(ctx, staff, merchantA, docA1, taken, key("a")); err == nil {
			t.Fatal("delete succeeded although its audit event could not be written")
		}
		if n, err := store.Count(ctx, st, "push_idempotency"); err != nil || n != 0 || !hasDocument(t, st, docA1) {
			t.Fatalf("after a failed delete: %d keys (%v), document there %v; want no key and the document", n, err, hasDocument(t, st, docA1))
		}
		if _, err := st.DeleteMerchantDocumentOnce(ctx, staff, merchantA, id(699), event(), key("a")); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("delete of an unknown document: %v", err)
		}
		if n, err := store.Count(ctx, st, "push_idempotency"); err != nil || n != 0 {
			t.Fatalf("a delete that found nothing kept %d keys (%v)", n, err)
		}
		for i, want := range []bool{false, true, true} {
			replayed, err := st.DeleteMerchantDocumentOnce(ctx, staff, merchantA, docA1, event(), key("a"))
			if err != nil || replayed != want {
				t.Fatalf("delete %d: replayed %v, %v; want %v", i, replayed, err, want)
			}
		}
		if _, err := st.ClaimPushKey(ctx, staffUser, []byte("running push"), itemA, fixtureNow, time.Minute); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"running push", "a"} {
			if _, err := st.DeleteMerchantDocumentOnce(ctx, staff, merchantA, docA2, event(), key(k)); !errors.Is(err, domain.ErrKeyReused) {
				t.Errorf("delete under key %q: %v, want reused", k, err)
			}
		}
		if c, err := st.ClaimPushKey(ctx, staffUser, []byte("a"), itemA, fixtureNow, time.Minute); err != nil || c.State != domain.KeyReused {
			t.Errorf("a push under a deletion's key: %+v, %v", c, err)
		}
		if !hasDocument(t, st, docA2) {
			t.Error("a delete under a reused key deleted")
		}
	})
}
