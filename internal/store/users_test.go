package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// The user commands' writes, on every engine: a user is created with its event, refused with the
// reason a caller can tell; a change takes at once for the user's credentials, writes its event,
// and a change that changes nothing writes neither.
func TestUserWrites(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		seed(t, st, testdb.Ring(t, "k1"), 0)
		agent := domain.NewID()
		p := partnerID
		u := domain.User{ID: agent, PartnerID: &p, Email: "Agent@Example.com", Permissions: []domain.Permission{domain.PermReadSAMActionLogs}}
		if err := st.CreateUser(ctx, u, event("user.create", agent)); err != nil {
			t.Fatalf("CreateUser: %v", err)
		}
		missing := domain.NewID()
		for _, tc := range []struct {
			u    domain.User
			want error
		}{
			{domain.User{ID: domain.NewID(), PartnerID: &missing, Email: "x@example.com"}, domain.ErrNotFound},
			{domain.User{ID: domain.NewID(), Email: "agent@EXAMPLE.com"}, store.ErrEmailTaken},
			{domain.User{ID: agent, Email: "other@example.com"}, store.ErrUserClash},
		} {
			if err := st.CreateUser(ctx, tc.u, event("user.create", tc.u.ID)); !errors.Is(err, tc.want) {
				t.Errorf("CreateUser(%s) = %v, want %v", tc.u.Email, err, tc.want)
			}
		}
		users, err := st.ListUsers(ctx)
		if err != nil || len(users) != 2 || users[0].ID != agent || users[1].ID != staffID || *users[0].PartnerID != partnerID {
			t.Fatalf("ListUsers = %+v, %v; want the agent, then the staff user (by email)", users, err)
		}

		disable := func(u *domain.User) string { u.Disabled = true; return "disabled" }
		if _, err := st.ChangeUser(ctx, staffID, disable, event("user.disable", staffID)); err != nil {
			t.Fatalf("disable: %v", err)
		}
		if _, err := actor(st, domain.CredentialAPIKey, importKey); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("the disabled user's key: %v, want refused", err)
		}
		if _, err := st.ChangeUser(ctx, staffID, disable, event("user.disable", staffID)); !errors.Is(err, store.ErrUnchanged) {
			t.Errorf("disabling again: %v, want ErrUnchanged", err)
		}
		after, err := st.ChangeUser(ctx, staffID, func(u *domain.User) string {
			u.Disabled = false
			u.Permissions = []domain.Permission{domain.PermReadAuditEvents}
			return "enabled, audit only"
		}, event("user.enable", staffID))
		if err != nil || after.Disabled || !slices.Equal(after.Permissions, []domain.Permission{domain.PermReadAuditEvents}) {
			t.Fatalf("enable = %+v, %v", after, err)
		}
		if a, err := actor(st, domain.CredentialAPIKey, importKey); err != nil || a.Can(domain.PermDecryptPrincipals) || !a.Can(domain.PermReadAuditEvents) {
			t.Errorf("the enabled user's key: %+v, %v; want it back with the new permissions alone", a, err)
		}
		if _, err := st.ChangeUser(ctx, missing, disable, event("user.disable", missing)); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("changing an unknown user: %v, want ErrNotFound", err)
		}

		events, _, err := st.ListAuditEvents(ctx, domain.AuditFilter{}, 1, 100)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range events {
			if strings.HasPrefix(e.Action, "user.") {
				got = append(got, e.Action+" "+e.Detail)
			}
		}
		if want := []string{"user.enable enabled, audit only", "user.disable disabled", "user.create "}; !slices.Equal(got, want) {
			t.Errorf("user events, newest first = %q, want %q", got, want)
		}
	})
}
