package store_test

import (
	"context"
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
