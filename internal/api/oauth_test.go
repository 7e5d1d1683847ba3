package api_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"backoffice/internal/api"
	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/gateway"
	"backoffice/internal/oauth"
	"backoffice/internal/oauth/oauthtest"
	"backoffice/internal/push"
	"backoffice/internal/testdb"
)

// Users only the token tests import.
var (
	disabledUser = id(105)
	externalUser = id(106)
)

const externalID = "idp|00u1-crm-sync"

// withTokens rebuilds the handler to accept p's access tokens, as serve does when an identity
// provider is configured; change adjusts the verifier's configuration and the handler's.
func (h *harness) withTokens(t *testing.T, p *oauthtest.Provider, change func(*oauth.Config, *api.Deps)) {
	t.Helper()
	ds := &dataset.Dataset{Users: []domain.User{
		{ID: disabledUser, Email: "gone@example.com", Permissions: []domain.Permission{domain.PermAll}, Disabled: true},
		{ID: externalUser, PartnerID: &partnerA, Email: "sync@example.com", Permissions: []domain.Permission{domain.PermReadServiceAcceptance}, ExternalID: ptr(externalID)},
	}}
	if _, err := dataset.Import(context.Background(), h.st, ds, nil); err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return fixtureNow }
	cfg := oauth.Config{Issuer: p.Issuer, Audience: oauthtest.Audience, HTTPClient: p.Client(), Now: now}
	gw := httptest.NewServer(h.sim)
	t.Cleanup(gw.Close)
	log := slog.New(slog.NewJSONHandler(h.logs, nil))
	d := api.Deps{Store: h.st, Ring: testdb.Ring(t), Logger: log, Now: now,
		Pusher: push.New(push.Config{Store: h.st, Gateway: gateway.New(gateway.Config{BaseURL: gw.URL, Token: "gw-token", Timeout: 2 * time.Second}),
			Budget: 2 * time.Second, Now: now, Logger: log})}
	if change != nil {
		change(&cfg, &d)
	}
	v, err := oauth.New(context.Background(), cfg)
	if err != nil && !errors.Is(err, oauth.ErrUnreachable) { // unreachable: serve starts, and so does this handler
		t.Fatal(err)
	}
	d.Tokens = v
	h.handler = api.New(d)
}

func bearer(tok string) string { return "Bearer " + tok }

// A token acts as the dataset's user it names, on every operation, exactly as that user's key:
// same permissions, same partner; a decrypt is audited with that user as the actor.
func TestAccessTokenOnEveryOperation(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		p := oauthtest.New(t)
		h.withTokens(t, p, nil)
		partnerA := bearer(p.Token(t, userA.String(), fixtureNow, nil))
		// The audit list is staff's: a partner's user is refused it as with a key.
		want := []int{http.StatusOK, http.StatusOK, http.StatusOK, http.StatusOK, http.StatusNoContent, http.StatusForbidden}
		for i, op := range operations() {
			if r := h.do(op.method, op.path, partnerA); r.Status != want[i] {
				t.Errorf("%s %s with a token: %d %s; want %d", op.method, op.path, r.Status, r.Body, want[i])
			}
		}
		staff := bearer(p.Token(t, staffUser.String(), fixtureNow, nil))
		var page auditPage
		r := h.do(http.MethodGet, "/v1/audit-events?action=principal.decrypt", staff)
		if r.Status != http.StatusOK {
			t.Fatalf("audit events with a staff token: %d %s", r.Status, r.Body)
		}
		r.decode(t, &page)
		if len(page.Data) != 1 || page.Data[0].ActorUserID != userA || page.Data[0].TargetID != principalA.String() || page.Data[0].Outcome != domain.OutcomeGranted {
			t.Errorf("the token's decrypt is on record as %+v; want one granted decrypt of %s by %s", page.Data, principalA, userA)
		}
		// The user's permissions and partner apply.
		for _, op := range operations() {
			wantError(t, h.do(op.method, op.path, bearer(p.Token(t, noPermUser.String(), fixtureNow, nil))), http.StatusForbidden, "forbidden")
		}
		wantError(t, h.do(http.MethodGet, "/v1/crm/leads/"+leadA.String()+"/service-acceptance", bearer(p.Token(t, userB.String(), fixtureNow, nil))), http.StatusNotFound, "not_found")
		wantError(t, h.do(http.MethodGet, "/v1/audit-events", partnerA), http.StatusForbidden, "forbidden")
		// Session tokens and API keys work beside tokens.
		for _, hdr := range []string{bearer(staffSession), "Api-Key " + staffKey} {
			if r := h.do(http.MethodGet, "/v1/crm/leads/"+leadA.String()+"/service-acceptance", hdr); r.Status != http.StatusOK {
				t.Errorf("%.12s…: %d %s", hdr, r.Status, r.Body)
			}
		}
	})
}

// A refused token is RFC 6750's 401: the error body, and WWW-Authenticate with
// error="invalid_token" and the reason, which names no claim's value.
func TestAccessTokenRefusals(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		p := oauthtest.New(t)
		h.withTokens(t, p, nil)
		path := "/v1/crm/leads/" + leadA.String() + "/service-acceptance"
		token := func(subject string, change func(*oauthtest.Claims, *oauthtest.Header)) string {
			return bearer(p.Token(t, subject, fixtureNow, change))
		}
		for _, c := range []struct {
			name, header, reason string
		}{
			{"expired", token(staffUser.String(), func(c *oauthtest.Claims, _ *oauthtest.Header) { c.Expiry = fixtureNow.Add(-time.Hour) }), "the token has expired"},
			{"another audience", token(staffUser.String(), func(c *oauthtest.Claims, _ *oauthtest.Header) { c.Audience = []string{"https://crm.example"} }), "the token's audience does not include this service"},
			{"unknown user", token(id(199).String(), nil), "the token's user is not a user of this service"},
			{"disabled user", token(disabledUser.String(), nil), "the token's user is disabled"},
			{"typ JWT", token(staffUser.String(), func(_ *oauthtest.Claims, h *oauthtest.Header) { h.Type = "JWT" }), "the token is not an access token (its typ header is not at+jwt)"},
			{"not signed", bearer("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."), "the token is not a JWT signed with an accepted algorithm (RS256, ES256, PS256, EdDSA and their longer forms)"},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := h.do(http.MethodGet, path, c.header)
				wantError(t, r, http.StatusUnauthorized, "unauthenticated")
				if got, want := r.err(t).Detail, "the access token is not accepted: "+c.reason; got != want {
					t.Errorf("detail %q; want %q", got, want)
				}
				if got, want := r.Header.Get("WWW-Authenticate"), `Bearer error="invalid_token", error_description="`+c.reason+`", Api-Key`; got != want {
					t.Errorf("WWW-Authenticate %q; want %q", got, want)
				}
			})
		}
		// The log says why, for the operator; never the token.
		tok := p.Token(t, staffUser.String(), fixtureNow, func(c *oauthtest.Claims, _ *oauthtest.Header) { c.Audience = []string{"https://crm.example"} })
		h.do(http.MethodGet, path, bearer(tok))
		logs := h.logs.String()
		if !strings.Contains(logs, `aud [\"https://crm.example\"], configured \"`+oauthtest.Audience) {
			t.Errorf("the log does not say which audience came: %s", logs)
		}
		if strings.Contains(logs, tok) || strings.Contains(logs, strings.Split(tok, ".")[2]) {
			t.Error("a token is in the log")
		}
		// Any other 401 keeps the plain challenge.
		if got := h.do(http.MethodGet, path, "Bearer not-a-session-token-000").Header.Get("WWW-Authenticate"); got != "Bearer, Api-Key" {
			t.Errorf("WWW-Authenticate of an unknown session token: %q", got)
		}
	})
}

// A token may name its user by the external id the dataset records for the user.
func TestAccessTokenByExternalID(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		p := oauthtest.New(t)
		h.withTokens(t, p, func(c *oauth.Config, _ *api.Deps) { c.UserKey = domain.UserKeyExternalID })
		path := "/v1/crm/leads/" + leadA.String() + "/service-acceptance"
		if r := h.do(http.MethodGet, path, bearer(p.Token(t, externalID, fixtureNow, nil))); r.Status != http.StatusOK {
			t.Fatalf("by external id: %d %s", r.Status, r.Body)
		}
		// Its permissions are the user's: acceptance only.
		wantError(t, h.do(http.MethodGet, samPath(leadA.String()), bearer(p.Token(t, externalID, fixtureNow, nil))), http.StatusForbidden, "forbidden")
		// A user id is no external id.
		r := h.do(http.MethodGet, path, bearer(p.Token(t, staffUser.String(), fixtureNow, nil)))
		wantError(t, r, http.StatusUnauthorized, "unauthenticated")
	})
}

// Refused tokens count as failed authentications, and past the limit are answered 429.
func TestRefusedTokensCountAsFailures(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		p := oauthtest.New(t)
		h.withTokens(t, p, func(_ *oauth.Config, d *api.Deps) { d.Limits = api.Limits{FailureRate: 0.0001, FailureBurst: 3} })
		path := "/v1/crm/leads/" + leadA.String() + "/service-acceptance"
		expired := bearer(p.Token(t, staffUser.String(), fixtureNow, func(c *oauthtest.Claims, _ *oauthtest.Header) { c.Expiry = fixtureNow.Add(-time.Hour) }))
		for range 3 {
			wantError(t, h.do(http.MethodGet, path, expired), http.StatusUnauthorized, "unauthenticated")
		}
		wantError(t, h.do(http.MethodGet, path, expired), http.StatusTooManyRequests, "rate_limited")
	})
}

// A token that cannot be checked because the identity provider's keys are not available is
// refused, but it is not the caller's failure: it does not spend the address's failure budget,
// so an outage of the provider never locks its users' offices out of their API keys and sessions.
func TestUncheckedTokensAreNoFailures(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		p := oauthtest.New(t)
		p.SetDown(true)
		h.withTokens(t, p, func(_ *oauth.Config, d *api.Deps) { d.Limits = api.Limits{FailureRate: 0.0001, FailureBurst: 3} })
		path := "/v1/crm/leads/" + leadA.String() + "/service-acceptance"
		tok := bearer(p.Token(t, staffUser.String(), fixtureNow, nil))
		for range 6 {
			r := h.do(http.MethodGet, path, tok)
			wantError(t, r, http.StatusUnauthorized, "unauthenticated")
			if !strings.Contains(r.err(t).Detail, "signing keys are not available") {
				t.Fatalf("detail %q; want it to say the provider's keys are not available", r.err(t).Detail)
			}
		}
		if r := h.get(path, staffKey); r.Status != http.StatusOK {
			t.Fatalf("an API key from the same address after the outage's refusals: %d %s", r.Status, r.Body)
		}
		// A token refused on its own merits still counts.
		forged := bearer(p.Token(t, staffUser.String(), fixtureNow, nil)[:20] + "x.y.z")
		for range 3 {
			wantError(t, h.do(http.MethodGet, path, forged), http.StatusUnauthorized, "unauthenticated")
		}
		wantError(t, h.do(http.MethodGet, path, forged), http.StatusTooManyRequests, "rate_limited")
	})
}
