package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// twoStores opens two stores on one SQLite file, each with its own pool: b stands for another
// process (a CLI command, another replica) writing while a serves. a keeps no idle connection,
// so b's are the last ones to close.
func twoStores(t *testing.T) (a, b *store.Store) {
	t.Helper()
	ctx := context.Background()
	url := testdb.URL(t, "sqlite")
	var err error
	if a, err = store.Open(ctx, url, store.WithPool(store.Pool{MaxOpenConns: 2})); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if err := a.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if b, err = store.Open(ctx, url); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

// Every read the store answers from its cache sees what another connection committed before
// the read began: a revoked key, a changed lead, a re-sealed SSN, new SAM logs.
func TestCachedReadsSeeOtherConnectionsCommits(t *testing.T) {
	ctx := context.Background()
	a, b := twoStores(t)
	ring := testdb.Ring(t, "k1")
	seed(t, a, ring, 1)
	staff := domain.Scope{}
	// Each read twice: the second is answered from the cache.
	for range 2 {
		if who, err := actor(a, store.KindAPIKey, importKey); err != nil || who.UserID != staffID {
			t.Fatalf("key: %+v, %v", who, err)
		}
		if sa, err := a.ServiceAcceptance(ctx, staff, leadID); err != nil || sa.Configured {
			t.Fatalf("lead: %+v, %v; want not configured", sa, err)
		}
		if ssn, err := a.PrincipalSSN(ctx, staff, leadID, principalID(0)); err != nil || ssn.KeyID != "k1" {
			t.Fatalf("SSN: %+v, %v; want key k1", ssn, err)
		}
		if got, total, _, err := a.ListVisibleSAMActionLogs(ctx, staff, leadID, 1, 20); err != nil || total != 0 || len(got) != 0 {
			t.Fatalf("logs: %d of %d, %v; want none", len(got), total, err)
		}
	}

	// b changes each of them, and closes: the last connection to the file apart from a's.
	keyID := domain.ID("00000000-0000-4000-8000-000000000111")
	if err := b.RevokeAPIKey(ctx, keyID, time.Now(), event("api_key.revoke", keyID)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.DB().ExecContext(ctx, `UPDATE leads SET sa_configured = 1 WHERE id = ?`, leadID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.DB().ExecContext(ctx, `UPDATE principals SET ssn_key_id = 'k2' WHERE id = ?`, principalID(0)); err != nil {
		t.Fatal(err)
	}
	logs := &dataset.Dataset{SAMActionLogs: []domain.SAMActionLog{{ID: domain.NewID(), EntityID: leadID, Action: "a", ActionDate: time.Now().UTC().Truncate(time.Microsecond), SamID: 1}}}
	if _, err := b.Import(ctx, logs, ring); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	if _, err := actor(a, store.KindAPIKey, importKey); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("key revoked by another connection: %v, want not found", err)
	}
	if sa, err := a.ServiceAcceptance(ctx, staff, leadID); err != nil || !sa.Configured {
		t.Errorf("lead changed by another connection: %+v, %v; want configured", sa, err)
	}
	if ssn, err := a.PrincipalSSN(ctx, staff, leadID, principalID(0)); err != nil || ssn.KeyID != "k2" {
		t.Errorf("SSN re-sealed by another connection: %+v, %v; want key k2", ssn, err)
	}
	if got, total, _, err := a.ListVisibleSAMActionLogs(ctx, staff, leadID, 1, 20); err != nil || total != 1 || len(got) != 1 {
		t.Errorf("logs imported by another connection: %d of %d, %v; want 1 of 1", len(got), total, err)
	}
}

// A scope sees through the cache only what it sees without it: an entry filled for staff does
// not answer a partner that may not see the lead, and the other way round.
func TestCachedReadsKeepScopes(t *testing.T) {
	ctx := context.Background()
	st := testdb.Open(t, "sqlite")
	ring := testdb.Ring(t, "k1")
	seed(t, st, ring, 1)
	other := domain.Scope{PartnerID: domain.ID("00000000-0000-4000-8000-000000000002")}
	for range 2 {
		if _, err := st.ServiceAcceptance(ctx, domain.Scope{}, leadID); err != nil {
			t.Fatal(err)
		}
		if _, err := st.PrincipalSSN(ctx, domain.Scope{}, leadID, principalID(0)); err != nil {
			t.Fatal(err)
		}
		if _, err := st.ServiceAcceptance(ctx, other, leadID); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("another partner's lead: %v, want not found", err)
		}
		if _, err := st.PrincipalSSN(ctx, other, leadID, principalID(0)); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("another partner's principal: %v, want not found", err)
		}
		if _, _, visible, err := st.ListVisibleSAMActionLogs(ctx, other, leadID, 1, 20); err != nil || visible {
			t.Errorf("another partner's entity: visible %v, %v; want not visible", visible, err)
		}
		if _, _, visible, err := st.ListVisibleSAMActionLogs(ctx, domain.Scope{}, leadID, 1, 20); err != nil || !visible {
			t.Errorf("staff: visible %v, %v; want visible", visible, err)
		}
	}
}

func TestReadCacheOnlyOnSQLite(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		if got, want := st.ReadCache(), st.Engine() == "sqlite"; got != want {
			t.Errorf("%s: ReadCache() = %v, want %v", st.Engine(), got, want)
		}
	})
}
