package auth_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"backoffice/internal/auth"
	"backoffice/internal/domain"
)

const jwtShaped = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"

// fakeStore answers credential lookups from a map by hash, and accounts from a map by ref.
type fakeStore struct {
	sessions map[string]domain.Credential
	accounts map[domain.UserRef]domain.Account
	err      error
	lookups  int
}

func (f *fakeStore) Credential(_ context.Context, kind string, hash []byte) (domain.Credential, error) {
	f.lookups++
	c, ok := f.sessions[kind+string(hash)]
	if !ok {
		return c, domain.ErrNotFound
	}
	return c, nil
}

func (f *fakeStore) NoteAPIKeyUse(domain.ID, time.Time, time.Duration) {}

func (f *fakeStore) Account(_ context.Context, ref domain.UserRef) (domain.Account, error) {
	if f.err != nil {
		return domain.Account{}, f.err
	}
	a, ok := f.accounts[ref]
	if !ok {
		return a, domain.ErrNotFound
	}
	return a, nil
}

// fakeTokens accepts the token "good" and names the user it maps to; it refuses anything else.
type fakeTokens struct {
	users map[string]domain.UserRef
	seen  []string
}

func (f *fakeTokens) Verify(_ context.Context, token string) (domain.UserRef, error) {
	f.seen = append(f.seen, token)
	if ref, ok := f.users[token]; ok {
		return ref, nil
	}
	return domain.UserRef{}, &auth.TokenError{Description: "the token has expired", Err: errors.New("exp in the past")}
}

func TestLooksLikeJWT(t *testing.T) {
	for s, want := range map[string]bool{
		jwtShaped:                          true,
		"aGVhZA.Ym9keQ.":                   true, // alg none: no signature, still a token (refused by the check)
		"bos_" + strings.Repeat("a", 52):   false,
		"a.b":                              false,
		"a.b.c.d":                          false,
		".b.c":                             false,
		"a..c":                             false,
		"a.b+c.d":                          false,
		"a.b/c.d":                          false,
		"a=.b.c":                           false,
		"staff-session-000000000001":       false,
		"imported.session.token-of-a-file": true, // an imported token of this shape reads as a JWT
	} {
		if got := auth.LooksLikeJWT(s); got != want {
			t.Errorf("LooksLikeJWT(%q) = %v; want %v", s, got, want)
		}
	}
}

func TestAccessTokens(t *testing.T) {
	actor := domain.Actor{UserID: "00000000-0000-4000-8000-000000000101", Permissions: []domain.Permission{domain.PermReadSAMActionLogs}}
	byID := domain.UserRef{Key: domain.UserKeyID, Value: string(actor.UserID)}
	gone := domain.UserRef{Key: domain.UserKeyExternalID, Value: "idp|gone"}
	unknown := domain.UserRef{Key: domain.UserKeyExternalID, Value: "idp|nobody"}
	tokens := &fakeTokens{users: map[string]domain.UserRef{"good.token.sig": byID, "gone.token.sig": gone, "unknown.token.sig": unknown}}
	st := &fakeStore{accounts: map[domain.UserRef]domain.Account{
		byID: {Actor: actor},
		gone: {Actor: domain.Actor{UserID: "00000000-0000-4000-8000-000000000104", Permissions: []domain.Permission{domain.PermAll}}, Disabled: true},
	}}
	a := auth.New(st, nil, auth.WithTokens(tokens, st))
	ctx := context.Background()

	got, err := a.Verify(ctx, auth.NewAttempt("Bearer good.token.sig"))
	if err != nil || got.UserID != actor.UserID || !got.Can(domain.PermReadSAMActionLogs) || got.Can(domain.PermDecryptPrincipals) {
		t.Fatalf("a good token: %+v, %v; want the user's own actor", got, err)
	}
	if st.lookups != 0 {
		t.Errorf("a token was looked up as a session %d times", st.lookups)
	}
	for header, want := range map[string]string{
		"Bearer expired.token.sig": "the access token is not accepted: the token has expired",
		"Bearer gone.token.sig":    "the access token is not accepted: the token's user is disabled",
		"Bearer unknown.token.sig": "the access token is not accepted: the token's user is not a user of this service",
	} {
		_, err := a.Verify(ctx, auth.NewAttempt(header))
		e, ok := domain.AsError(err)
		if !ok || e.Kind != domain.KindUnauthenticated || e.Code != "unauthenticated" || e.Detail != want {
			t.Errorf("%s: %v; want 401 unauthenticated %q", header, err, want)
		}
		var te *auth.TokenError
		if !errors.As(err, &te) || !auth.Failed(err) {
			t.Errorf("%s: %v; want a *TokenError that counts as a failed authentication", header, err)
		}
	}
	// A credential that is no JWT is a session token, whatever the tokens say.
	if _, err := a.Verify(ctx, auth.NewAttempt("Bearer staff-session-000000000001")); !auth.Failed(err) || st.lookups != 1 {
		t.Errorf("a session token: %v after %d lookups; want a session lookup, unauthenticated", err, st.lookups)
	}
	// An Api-Key is never a token, whatever its shape.
	if _, err := a.Verify(ctx, auth.NewAttempt("Api-Key good.token.sig")); !auth.Failed(err) || st.lookups != 2 {
		t.Errorf("a token sent as Api-Key: %v after %d lookups; want an API key lookup, unauthenticated", err, st.lookups)
	}
	// The database failing is no refusal of the token: it stays the store's error (503, not 401).
	st.err = domain.ErrUnavailable
	if _, err := a.Verify(ctx, auth.NewAttempt("Bearer good.token.sig")); !errors.Is(err, domain.ErrUnavailable) || auth.Failed(err) {
		t.Errorf("store unavailable: %v; want ErrUnavailable, not a refusal", err)
	}
}

// Without an identity provider every Bearer credential is a session token, JWT-shaped or not.
func TestBearerWithoutTokensIsASession(t *testing.T) {
	st := &fakeStore{}
	a := auth.New(st, nil)
	_, err := a.Verify(context.Background(), auth.NewAttempt("Bearer "+jwtShaped))
	var te *auth.TokenError
	if !auth.Failed(err) || errors.As(err, &te) || st.lookups != 1 {
		t.Fatalf("%v after %d lookups; want one session lookup and the plain refusal", err, st.lookups)
	}
}
