package client_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"backoffice/client"
	"backoffice/internal/api"
	"backoffice/internal/oauth"
	"backoffice/internal/oauth/oauthtest"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// A client with a token source sends the source's token on each request, and a source that
// fails ends the call before anything is sent.
func TestTokenSource(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		newService(t, st, api.Limits{}) // the demo dataset
		p := oauthtest.New(t)
		v, err := oauth.New(context.Background(), oauth.Config{Issuer: p.Issuer, Audience: oauthtest.Audience, HTTPClient: p.Client()})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(api.New(api.Deps{Store: st, Ring: testdb.Ring(t), Logger: slog.New(slog.DiscardHandler), Tokens: v}))
		t.Cleanup(srv.Close)

		var asked atomic.Int64
		source := func(context.Context) (string, error) {
			asked.Add(1)
			return p.Token(t, staffUser, time.Now(), nil), nil
		}
		rec := &recorder{next: http.DefaultTransport}
		c := newClient(t, srv.URL, rec, client.WithTokenSource(source))
		ctx := context.Background()
		if _, err := c.ServiceAcceptance(ctx, lead); err != nil {
			t.Fatal(err)
		}
		if _, err := c.DecryptPrincipalSSN(ctx, lead, principal); err != nil {
			t.Fatal(err)
		}
		if asked.Load() != 2 || len(rec.sent) != 2 || rec.sent[1].Header.Get("Authorization")[:7] != "Bearer " {
			t.Errorf("the source was asked %d times for %d requests (%v)", asked.Load(), len(rec.sent), rec.sent)
		}

		broken := errors.New("the identity provider said no")
		c = newClient(t, srv.URL, rec, client.WithTokenSource(func(context.Context) (string, error) { return "", broken }))
		if _, err := c.ServiceAcceptance(ctx, lead); !errors.Is(err, broken) {
			t.Errorf("err = %v; want the source's", err)
		}
		if len(rec.sent) != 2 {
			t.Errorf("a request went out without a token")
		}
		// A refused token is an *Error: 401, with the reason.
		c = newClient(t, srv.URL, rec, client.WithTokenSource(func(context.Context) (string, error) {
			return p.Token(t, staffUser, time.Now().Add(-2*time.Hour), nil), nil
		}))
		_, err = c.ServiceAcceptance(ctx, lead)
		wantError(t, err, http.StatusUnauthorized, "unauthenticated")
	})
}
