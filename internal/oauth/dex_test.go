package oauth_test

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/oauth"
	"backoffice/internal/oauth/oauthtest"
)

// Dex (dexidp/dex), as docs/credentials.md describes it: its access tokens are JWTs with the
// same claims as its ID tokens, untyped, and its audience is a client id. The test runs where a
// dex binary is on PATH; elsewhere, CI included, it skips. Dex is no Debian package, and the
// module proxy's latest version of github.com/dexidp/dex is a release from before Go modules:
// build it from a checkout of its repository, with its api/v2 module taken from the same commit
// (go mod edit -replace github.com/dexidp/dex/api/v2=./api/v2, then go build ./cmd/dex).

// The test's Dex settings: a client standing for this API, which no one signs in with, a calling
// service and a front end that ask for it as their audience, and a person in Dex's own password
// database.
const (
	dexAPIClient     = "backoffice"
	dexServiceClient = "svc-reports"
	dexWebClient     = "backoffice-web"
	dexSecret        = "client-secret-of-the-test-only-0002"
	dexUser          = "alice@example.com"
	// dexPasswordHash is bcrypt's hash of "password", the test person's password.
	dexPasswordHash = "$2a$10$YSpey64wxNsmd28Oln15iuSVXnQxqGDF8/pKOlm.C9V17pX5h4/42"
)

func TestDex(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an identity provider")
	}
	bin, err := exec.LookPath("dex")
	if err != nil {
		t.Skip("dex is not on PATH: the test against Dex is skipped")
	}
	dex := startDex(t, bin)

	// Tokens as an operator gets them: a person's through the password grant, a service's through
	// the client credentials grant, asking for this API's client as its audience.
	audience := "audience:server:client_id:" + dexAPIClient
	person := dex.token(t, dexWebClient, url.Values{"grant_type": {"password"}, "username": {dexUser}, "password": {"password"}, "scope": {"openid email profile " + audience}})
	service := dex.token(t, dexServiceClient, url.Values{"grant_type": {"client_credentials"}, "scope": {"openid " + audience}})
	own := dex.token(t, dexServiceClient, url.Values{"grant_type": {"client_credentials"}, "scope": {"openid"}})
	// Without openid, Dex issues no ID token: a service that asks so holds none with this API's
	// audience.
	bare := dex.token(t, dexServiceClient, url.Values{"grant_type": {"client_credentials"}, "scope": {audience}})
	if bare.ID != "" {
		t.Errorf("client credentials without openid: Dex issued an ID token; the docs say it issues none")
	}
	if res := dex.post(t, dexServiceClient, url.Values{"grant_type": {"client_credentials"}, "scope": {"backoffice"}}); res.StatusCode != http.StatusBadRequest {
		t.Errorf("a scope Dex does not know: %s; want 400 invalid_scope", res.Status)
	}

	// What credentials.md says of them: untyped, and an access token carries what an ID token
	// does, at_hash included.
	for name, tok := range map[string]string{"person's access token": person.Access, "person's ID token": person.ID, "service's access token": service.Access, "service's ID token": service.ID} {
		h, c := jwtParts(t, tok)
		t.Logf("%s: header %v, claims %v", name, h, slices.Sorted(maps.Keys(c)))
		if typ, ok := h["typ"]; ok && !strings.EqualFold(typ.(string), "JWT") {
			t.Errorf("%s: typ %v; the docs say Dex does not type its tokens", name, typ)
		}
		if _, ok := c["at_hash"]; !ok {
			t.Errorf("%s: no at_hash; the docs say Dex's access and ID tokens both carry it", name)
		}
		for _, claim := range []string{"client_id", "scope"} {
			if _, ok := c[claim]; ok {
				t.Errorf("%s: a %s claim; the docs say Dex's tokens have none", name, claim)
			}
		}
	}
	_, sc := jwtParts(t, service.Access)
	if aud, _ := sc["aud"].([]any); len(aud) != 2 || aud[0] != dexAPIClient || sc["azp"] != dexServiceClient {
		t.Errorf("service's access token: aud %v, azp %v; want [%s %s], %s", sc["aud"], sc["azp"], dexAPIClient, dexServiceClient, dexServiceClient)
	}

	verify := func(cfg oauth.Config, tok string) (domain.UserRef, error) {
		t.Helper()
		cfg.Issuer, cfg.Audience, cfg.HTTPClient = dex.issuer, dexAPIClient, dex.http
		cfg.UserKey = domain.UserKeyExternalID
		v, err := oauth.New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return v.Verify(context.Background(), tok)
	}
	// By default nothing of Dex's is accepted: its tokens are not typed at+jwt.
	_, err = verify(oauth.Config{}, service.Access)
	refusedWith(t, err, "typ header is not at+jwt")
	// Typ JWT allowed: both kinds are refused as ID tokens, since they cannot be told apart.
	for name, tok := range map[string]string{"person's access token": person.Access, "person's ID token": person.ID, "service's access token": service.Access} {
		_, err := verify(oauth.Config{AllowJWTType: true}, tok)
		t.Run(name, func(t *testing.T) { refusedWith(t, err, "shaped as an ID token") })
	}
	// ID token claims allowed: the audience alone decides; the user is Dex's sub, as an external id.
	lenient := oauth.Config{AllowJWTType: true, AllowIDTokenClaims: true}
	ref, err := verify(lenient, service.Access)
	if err != nil || ref.Key != domain.UserKeyExternalID || ref.Value != sc["sub"] {
		t.Errorf("service's access token with ID token claims allowed: %+v, %v; want its sub as an external id", ref, err)
	}
	for name, tok := range map[string]string{"person's access token": person.Access, "service's access token without openid": bare.Access} {
		if _, err := verify(lenient, tok); err != nil {
			t.Errorf("%s with ID token claims allowed: %v", name, err)
		}
	}
	_, err = verify(lenient, own.Access)
	refusedWith(t, err, "audience does not include this service")
}

// dexServer is a running Dex and an HTTPS client that trusts it.
type dexServer struct {
	issuer string
	http   *http.Client
}

// dexTokens is a token endpoint's answer.
type dexTokens struct {
	Access string `json:"access_token"`
	ID     string `json:"id_token"`
}

// startDex makes a CA and a certificate for 127.0.0.1, and starts Dex over TLS on a free port
// with in-memory storage until the test ends.
func startDex(t *testing.T, bin string) *dexServer {
	t.Helper()
	dir := t.TempDir()
	_, certFile, keyFile, pool := oauthtest.Certificates(t, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	issuer := "https://" + addr + "/dex"
	// JSON is YAML: Dex reads it as its configuration file.
	conf, err := json.Marshal(map[string]any{
		"issuer":  issuer,
		"storage": map[string]any{"type": "memory"},
		"web":     map[string]any{"https": addr, "tlsCert": certFile, "tlsKey": keyFile},
		"oauth2": map[string]any{"passwordConnector": "local", "skipApprovalScreen": true,
			"grantTypes": []string{"authorization_code", "password", "client_credentials", "refresh_token"}},
		"enablePasswordDB": true,
		"staticPasswords": []map[string]any{{"email": dexUser, "hash": dexPasswordHash, "username": "alice",
			"userID": "00000000-0000-4000-8000-000000000101"}},
		"staticClients": []map[string]any{
			// The API's client: only its trusted peers get tokens with it as their audience.
			{"id": dexAPIClient, "name": "Back office", "secret": dexSecret, "trustedPeers": []string{dexServiceClient, dexWebClient}},
			{"id": dexServiceClient, "name": "Reports", "secret": dexSecret},
			{"id": dexWebClient, "name": "Back office front end", "secret": dexSecret, "redirectURIs": []string{"https://backoffice.test/callback"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	confFile := filepath.Join(dir, "dex.yaml")
	if err := os.WriteFile(confFile, conf, 0o600); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	cmd := exec.Command(bin, "serve", confFile)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("dex's log:\n%s", logs.String())
		}
	})
	d := &dexServer{issuer: issuer, http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := d.http.Get(issuer + "/.well-known/openid-configuration")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return d
			}
		}
		select {
		case <-done:
			t.Fatalf("dex stopped:\n%s", logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("dex did not come up: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// post sends a token request as client (client_secret_basic).
func (d *dexServer) post(t *testing.T, client string, form url.Values) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, d.issuer+"/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client, dexSecret)
	res, err := d.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

func (d *dexServer) token(t *testing.T, client string, form url.Values) dexTokens {
	t.Helper()
	res := d.post(t, client, form)
	var out dexTokens
	if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&out) != nil || out.Access == "" {
		t.Fatalf("dex's token endpoint, %s for %s: %s", form.Get("grant_type"), client, res.Status)
	}
	return out
}

// jwtParts decodes a JWT's header and claims, unchecked.
func jwtParts(t *testing.T, tok string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	for i, v := range []*map[string]any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	return header, claims
}
