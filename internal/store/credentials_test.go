package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"backoffice/internal/auth"
	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

var (
	partnerID = domain.ID("00000000-0000-4000-8000-000000000001")
	staffID   = domain.ID("00000000-0000-4000-8000-000000000101")
	leadID    = domain.ID("00000000-0000-4000-8000-000000000301")
	importKey = "imported-key-from-a-dataset-file"
)

func principalID(i int) domain.ID {
	return domain.ID(fmt.Sprintf("00000000-0000-4000-8000-%012d", 100000+i))
}

func ssnOf(i int) string { return fmt.Sprintf("%03d-%02d-%04d", i%1000, i%100, i) }

// seed imports a staff user with an imported API key, and n principals with SSNs sealed under ring.
func seed(t *testing.T, st *store.Store, ring *secrets.Ring, n int) {
	t.Helper()
	ds := &dataset.Dataset{
		Partners: []domain.Partner{{ID: partnerID, Name: "P"}},
		Users:    []domain.User{{ID: staffID, Email: "ops@example.com", Permissions: []domain.Permission{domain.PermAll}}},
		APIKeys:  []domain.APIKey{{ID: domain.ID("00000000-0000-4000-8000-000000000111"), UserID: staffID, Key: importKey}},
		Leads:    []domain.Lead{{ID: leadID, PartnerID: partnerID, BusinessName: "L"}},
	}
	for i := range n {
		ssn := ssnOf(i)
		ds.Principals = append(ds.Principals, domain.Principal{ID: principalID(i), LeadID: leadID, FirstName: "F", LastName: "L", SSN: &ssn})
	}
	if _, err := dataset.Import(context.Background(), st, ds, ring); err != nil {
		t.Fatal(err)
	}
}

func event(action string, target domain.ID) domain.AuditEvent {
	return domain.AuditEvent{At: time.Now(), ActorUserID: domain.SystemActorID, Action: action, TargetID: string(target), Outcome: domain.OutcomeGranted}
}

// actor is what authenticating with the secret as a credential of the kind gives, now: the actor,
// or domain.ErrNotFound when the credential may not be used.
func actor(st *store.Store, kind, secret string) (domain.Actor, error) {
	return actorAt(st, time.Now, kind, secret)
}

// actorAt is actor at the time clock tells.
func actorAt(st *store.Store, clock func() time.Time, kind, secret string) (domain.Actor, error) {
	scheme := map[string]string{domain.CredentialAPIKey: "Api-Key ", domain.CredentialSession: "Bearer "}[kind]
	a, err := auth.New(st, clock).Verify(context.Background(), auth.NewAttempt(scheme+secret))
	if auth.Failed(err) {
		return a, domain.ErrNotFound
	}
	store.WaitBackground(st)
	return a, err
}

func TestImportedKeyStillAuthenticates(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		seed(t, st, testdb.Ring(t, "k1"), 0)
		if a, err := actor(st, domain.CredentialAPIKey, importKey); err != nil || a.UserID != staffID {
			t.Fatalf("imported key: %+v, %v", a, err)
		}
		keys, err := st.ListAPIKeys(context.Background(), store.APIKeyFilter{})
		if err != nil || len(keys) != 1 {
			t.Fatalf("ListAPIKeys = %+v, %v", keys, err)
		}
		if k := keys[0]; k.Prefix != nil || k.CreatedAt != nil || k.RevokedAt != nil || k.Name != "" {
			t.Errorf("imported key lists as %+v; want no prefix, creation or revocation", k)
		}
	})
}

func TestAPIKeyLifecycle(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		seed(t, st, testdb.Ring(t, "k1"), 0)
		key, prefix := secrets.NewAPIKey()
		now := time.Now().UTC().Truncate(time.Microsecond)
		id := domain.NewID()
		k := store.NewAPIKey{ID: id, UserID: staffID, Name: "ci", Prefix: prefix, Hash: secrets.HashCredential(domain.CredentialAPIKey, key), CreatedAt: now}
		if err := st.CreateAPIKey(ctx, k, event("api_key.create", id)); err != nil {
			t.Fatal(err)
		}
		if a, err := actor(st, domain.CredentialAPIKey, key); err != nil || a.UserID != staffID {
			t.Fatalf("new key: %+v, %v", a, err)
		}
		if _, err := actor(st, domain.CredentialSession, key); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("API key as a session token: %v, want not found", err)
		}
		listed, err := st.ListAPIKeys(ctx, store.APIKeyFilter{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		want := []store.APIKeyInfo{{ID: id, UserID: staffID, Name: "ci", Prefix: &prefix, CreatedAt: &now}}
		store.WaitBackground(st)
		if diff := cmp.Diff(want, listed, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".LastUsedAt" }, cmp.Ignore())); diff != "" {
			t.Errorf("ListAPIKeys by prefix (-want +got):\n%s", diff)
		}

		if err := st.RevokeAPIKey(ctx, id, now, event("api_key.revoke", id)); err != nil {
			t.Fatal(err)
		}
		if _, err := actor(st, domain.CredentialAPIKey, key); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("revoked key: %v, want not found", err)
		}
		if err := st.RevokeAPIKey(ctx, id, now, event("api_key.revoke", id)); !errors.Is(err, store.ErrAlreadyRevoked) {
			t.Errorf("second revoke: %v, want ErrAlreadyRevoked", err)
		}
		if err := st.RevokeAPIKey(ctx, domain.NewID(), now, event("api_key.revoke", id)); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("revoke of an unknown key: %v, want not found", err)
		}
		assertAudit(t, st, []string{"api_key.create", "api_key.revoke"})
	})
}

func assertAudit(t *testing.T, st *store.Store, want []string) {
	t.Helper()
	ds, err := dataset.Export(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ds.AuditEvents {
		got = append(got, e.Action)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exported audit actions (-want +got):\n%s", diff)
	}
}

func TestCreateAPIKeyRefusals(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		seed(t, st, testdb.Ring(t, "k1"), 0)
		key, prefix := secrets.NewAPIKey()
		k := store.NewAPIKey{ID: domain.NewID(), UserID: domain.NewID(), Prefix: prefix, Hash: secrets.HashCredential(domain.CredentialAPIKey, key), CreatedAt: time.Now()}
		if err := st.CreateAPIKey(ctx, k, event("api_key.create", k.ID)); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("key for an unknown user: %v, want not found", err)
		}
		k.UserID = staffID
		if err := st.CreateAPIKey(ctx, k, event("api_key.create", k.ID)); err != nil {
			t.Fatal(err)
		}
		other, _ := secrets.NewAPIKey()
		clash := store.NewAPIKey{ID: domain.NewID(), UserID: staffID, Prefix: prefix, Hash: secrets.HashCredential(domain.CredentialAPIKey, other), CreatedAt: time.Now()}
		if err := st.CreateAPIKey(ctx, clash, event("api_key.create", clash.ID)); !errors.Is(err, store.ErrCredentialClash) {
			t.Errorf("a second key with the same prefix: %v, want ErrCredentialClash", err)
		}
		assertAudit(t, st, []string{"api_key.create"})
	})
}

func TestExpiredKeyIsRefused(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		seed(t, st, testdb.Ring(t, "k1"), 0)
		now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
		clock := func() time.Time { return now }
		key, prefix := secrets.NewAPIKey()
		expires := now.Add(time.Hour)
		k := store.NewAPIKey{ID: domain.NewID(), UserID: staffID, Prefix: prefix, Hash: secrets.HashCredential(domain.CredentialAPIKey, key), CreatedAt: now, ExpiresAt: &expires}
		if err := st.CreateAPIKey(ctx, k, event("api_key.create", k.ID)); err != nil {
			t.Fatal(err)
		}
		if _, err := actorAt(st, clock, domain.CredentialAPIKey, key); err != nil {
			t.Fatalf("before expiry: %v", err)
		}
		now = expires
		if _, err := actorAt(st, clock, domain.CredentialAPIKey, key); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("at expiry: %v, want not found", err)
		}
	})
}

// The last use is stamped at most once a minute, so a busy key does not write on every request.
func TestLastUseIsStampedAtMostOnceAMinute(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		seed(t, st, testdb.Ring(t, "k1"), 0)
		start := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
		now := start
		clock := func() time.Time { return now }
		key, prefix := secrets.NewAPIKey()
		k := store.NewAPIKey{ID: domain.NewID(), UserID: staffID, Prefix: prefix, Hash: secrets.HashCredential(domain.CredentialAPIKey, key), CreatedAt: now}
		if err := st.CreateAPIKey(ctx, k, event("api_key.create", k.ID)); err != nil {
			t.Fatal(err)
		}
		lastUsed := func() *time.Time {
			t.Helper()
			store.WaitBackground(st)
			keys, err := st.ListAPIKeys(ctx, store.APIKeyFilter{Prefix: prefix})
			if err != nil || len(keys) != 1 {
				t.Fatalf("ListAPIKeys = %v, %v", keys, err)
			}
			return keys[0].LastUsedAt
		}
		if got := lastUsed(); got != nil {
			t.Fatalf("unused key has last use %v", got)
		}
		use := func(at time.Time) {
			t.Helper()
			now = at
			if _, err := actorAt(st, clock, domain.CredentialAPIKey, key); err != nil {
				t.Fatal(err)
			}
		}
		for _, step := range []struct {
			at   time.Time
			want time.Time
		}{
			{start, start},
			{start.Add(59 * time.Second), start},
			{start.Add(time.Minute), start.Add(time.Minute)},
		} {
			use(step.at)
			if got := lastUsed(); got == nil || !got.Equal(step.want) {
				t.Errorf("used at %v: last use %v, want %v", step.at, got, step.want)
			}
		}
	})
}

func TestSessionLifecycle(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		seed(t, st, testdb.Ring(t, "k1"), 0)
		token := secrets.NewSessionToken()
		now := time.Now()
		n := store.NewSession{ID: domain.NewID(), UserID: staffID, Hash: secrets.HashCredential(domain.CredentialSession, token), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := st.CreateSession(ctx, n, event("session.create", n.ID)); err != nil {
			t.Fatal(err)
		}
		if a, err := actor(st, domain.CredentialSession, token); err != nil || a.UserID != staffID {
			t.Fatalf("new session: %+v, %v", a, err)
		}
		if err := st.RevokeSession(ctx, n.ID, now, event("session.revoke", n.ID)); err != nil {
			t.Fatal(err)
		}
		if _, err := actor(st, domain.CredentialSession, token); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("revoked session: %v, want not found", err)
		}
		if err := st.RevokeSession(ctx, n.ID, now, event("session.revoke", n.ID)); !errors.Is(err, store.ErrAlreadyRevoked) {
			t.Errorf("second revoke: %v, want ErrAlreadyRevoked", err)
		}
		assertAudit(t, st, []string{"session.create", "session.revoke"})
	})
}

// Sessions are listed oldest first, an imported one (no creation time) before those issued here,
// revoked and expired ones as such, by user on request; the list holds no token or hash.
func TestListSessions(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		other := domain.ID("00000000-0000-4000-8000-000000000102")
		imported := domain.ID("00000000-0000-4000-8000-000000000121")
		expires := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) // long past: an expired session is listed too
		ds := &dataset.Dataset{
			Users:    []domain.User{{ID: staffID, Email: "ops@example.com"}, {ID: other, Email: "other@example.com"}},
			Sessions: []domain.Session{{ID: imported, UserID: other, Token: "an-imported-session-token", ExpiresAt: expires}},
		}
		if _, err := dataset.Import(ctx, st, ds, nil); err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		var issued []domain.ID
		for i, user := range []domain.ID{staffID, other, staffID} {
			n := store.NewSession{ID: domain.NewID(), UserID: user, Hash: secrets.HashCredential(domain.CredentialSession, fmt.Sprint("token", i)),
				CreatedAt: at.Add(time.Duration(i) * time.Minute), ExpiresAt: at.Add(time.Hour)}
			if err := st.CreateSession(ctx, n, event("session.create", n.ID)); err != nil {
				t.Fatal(err)
			}
			issued = append(issued, n.ID)
		}
		revokedAt := at.Add(30 * time.Minute)
		if err := st.RevokeSession(ctx, issued[0], revokedAt, event("session.revoke", issued[0])); err != nil {
			t.Fatal(err)
		}
		ptr := func(t time.Time) *time.Time { return &t }
		all := []store.SessionInfo{
			{ID: imported, UserID: other, ExpiresAt: expires},
			{ID: issued[0], UserID: staffID, CreatedAt: ptr(at), ExpiresAt: at.Add(time.Hour), RevokedAt: &revokedAt},
			{ID: issued[1], UserID: other, CreatedAt: ptr(at.Add(time.Minute)), ExpiresAt: at.Add(time.Hour)},
			{ID: issued[2], UserID: staffID, CreatedAt: ptr(at.Add(2 * time.Minute)), ExpiresAt: at.Add(time.Hour)},
		}
		for _, c := range []struct {
			user domain.ID
			want []store.SessionInfo
		}{{"", all}, {staffID, []store.SessionInfo{all[1], all[3]}}, {other, []store.SessionInfo{all[0], all[2]}}, {leadID, nil}} {
			got, err := st.ListSessions(ctx, c.user)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("sessions of %q (-want +got):\n%s", c.user, diff)
			}
		}
	})
}

func TestRewrapSSNsBatches(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		seed(t, st, testdb.Ring(t, "old"), 25)
		ring := testdb.Ring(t, "new", "old")
		var after domain.ID
		var moved, batches int
		for {
			b, err := st.RewrapSSNs(ctx, ring, after, 10)
			if err != nil {
				t.Fatal(err)
			}
			if b.Seen == 0 {
				break
			}
			if b.Changed != 0 || len(b.Failed) != 0 {
				t.Fatalf("batch %+v: nothing should change or fail", b)
			}
			moved, after, batches = moved+b.Moved, b.Last, batches+1
		}
		if moved != 25 || batches != 3 {
			t.Errorf("moved %d in %d batches, want 25 in 3", moved, batches)
		}
		counts, err := st.SSNKeyCounts(ctx)
		if diff := cmp.Diff([]store.KeyCount{{KeyID: "new", Values: 25}}, counts); err != nil || diff != "" {
			t.Errorf("SSNKeyCounts (-want +got), %v:\n%s", err, diff)
		}
		ds, err := dataset.Export(ctx, st, testdb.Ring(t, "new"))
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range ds.Principals {
			if p.SSN == nil || *p.SSN != ssnOf(i) {
				t.Fatalf("principal %d: SSN does not open to its value after rewrap", i)
			}
		}
	})
}

// A batch reads back each value it moved: a trigger that alters the new seal on its way fails the
// batch, rolled back, so no value is counted under the new key (which would let the old one go)
// while the row holds something else.
func TestRewrapSSNsReadsBack(t *testing.T) {
	alter := map[string]string{
		"sqlite":   `CREATE TRIGGER zz AFTER UPDATE OF ssn_sealed ON principals BEGIN UPDATE principals SET ssn_sealed = X'00' WHERE id = NEW.id; END`,
		"postgres": `CREATE FUNCTION zz() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.ssn_sealed := '\x00'::bytea; RETURN NEW; END $$; CREATE TRIGGER zz BEFORE UPDATE ON principals FOR EACH ROW EXECUTE FUNCTION zz()`,
	}
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		seed(t, st, testdb.Ring(t, "old"), 3)
		if _, err := testdb.SQLOf(t, st).ExecContext(ctx, alter[st.Engine()]); err != nil {
			t.Fatal(err)
		}
		b, err := st.RewrapSSNs(ctx, testdb.Ring(t, "new", "old"), "", 10)
		if err == nil || !strings.Contains(err.Error(), "did not read back as written") {
			t.Fatalf("rewrap with its writes altered: %+v, %v; want the read-back's error", b, err)
		}
		counts, err := st.SSNKeyCounts(ctx)
		if diff := cmp.Diff([]store.KeyCount{{KeyID: "old", Values: 3}}, counts); err != nil || diff != "" {
			t.Errorf("after the refused batch, SSNKeyCounts (-want +got), %v:\n%s", err, diff)
		}
	})
}

// A value whose key is not in the ring is reported and left alone; the rest still move.
func TestRewrapSSNsReportsValuesThatDoNotOpen(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		seed(t, st, testdb.Ring(t, "lost"), 1)
		ds := &dataset.Dataset{Principals: []domain.Principal{{ID: principalID(1), LeadID: leadID, FirstName: "F", LastName: "L", SSN: ptr(ssnOf(1))}}}
		if _, err := dataset.Import(ctx, st, ds, testdb.Ring(t, "old")); err != nil {
			t.Fatal(err)
		}
		b, err := st.RewrapSSNs(ctx, testdb.Ring(t, "new", "old"), "", 100)
		if err != nil {
			t.Fatal(err)
		}
		if b.Seen != 2 || b.Moved != 1 || len(b.Failed) != 1 {
			t.Fatalf("batch = %+v; want 2 seen, 1 moved, 1 failed", b)
		}
		if f := b.Failed[0]; f.PrincipalID != principalID(0) || f.KeyID != "lost" || !errors.Is(f.Err, secrets.ErrUnknownKey) {
			t.Errorf("failure = %+v; want principal 0 under key lost, unknown key", f)
		}
	})
}

func ptr[T any](v T) *T { return &v }
