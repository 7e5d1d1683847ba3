package app

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"backoffice/internal/domain"
	"backoffice/internal/oauth"
)

func TestOAuthConfig(t *testing.T) {
	off, err := loadConfig(noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if _, on, err := off.OAuth.verifierConfig(); on || err != nil {
		t.Fatalf("nothing set: on %v, %v; want off", on, err)
	}
	cfg, err := loadConfig(envOf(map[string]string{
		"BACKOFFICE_OAUTH_ISSUER": "https://idp.example/realms/ops", "BACKOFFICE_OAUTH_AUDIENCE": "backoffice",
	}))
	if err != nil {
		t.Fatal(err)
	}
	got, on, err := cfg.OAuth.verifierConfig()
	want := oauth.Config{Issuer: "https://idp.example/realms/ops", Audience: "backoffice", UserClaim: "sub", UserKey: domain.UserKeyID, KeysMaxAge: 2 * time.Minute, MaxLifetime: 24 * time.Hour}
	if !on || err != nil {
		t.Fatalf("on %v, %v", on, err)
	}
	if diff := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool {
		return p.String() == "Now" || p.String() == "HTTPClient" || p.String() == "Logger"
	}, cmp.Ignore())); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	cfg, err = loadConfig(envOf(map[string]string{
		"BACKOFFICE_OAUTH_ISSUER": "https://idp.example", "BACKOFFICE_OAUTH_AUDIENCE": "api://backoffice",
		"BACKOFFICE_OAUTH_USER_CLAIM": "oid", "BACKOFFICE_OAUTH_USER_MATCH": "external_id",
		"BACKOFFICE_OAUTH_ALLOW_TYP_JWT": "true", "BACKOFFICE_OAUTH_JWKS_MAX_AGE": "45s",
		"BACKOFFICE_OAUTH_ALLOW_ID_TOKEN_CLAIMS": "true", "BACKOFFICE_OAUTH_MAX_TOKEN_LIFETIME": "1h",
	}))
	if err != nil {
		t.Fatal(err)
	}
	got, _, err = cfg.OAuth.verifierConfig()
	if err != nil || got.UserClaim != "oid" || got.UserKey != domain.UserKeyExternalID || !got.AllowJWTType || got.KeysMaxAge != 45*time.Second ||
		!got.AllowIDTokenClaims || got.MaxLifetime != time.Hour {
		t.Errorf("every variable set: %+v, %v", got, err)
	}
}

func TestOAuthConfigRefusals(t *testing.T) {
	both := map[string]string{"BACKOFFICE_OAUTH_ISSUER": "https://idp.example", "BACKOFFICE_OAUTH_AUDIENCE": "backoffice"}
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for a, b := range both {
			if a != k {
				m[a] = b
			}
		}
		return m
	}
	for _, tc := range []struct {
		name string
		vars map[string]string
		want string
	}{
		{"audience alone", map[string]string{"BACKOFFICE_OAUTH_AUDIENCE": "backoffice"}, "BACKOFFICE_OAUTH_ISSUER is not"},
		{"issuer alone", map[string]string{"BACKOFFICE_OAUTH_ISSUER": "https://idp.example"}, "BACKOFFICE_OAUTH_AUDIENCE is not"},
		{"user match", with("BACKOFFICE_OAUTH_USER_MATCH", "email"), `"email" is not id or external_id`},
		{"typ switch", with("BACKOFFICE_OAUTH_ALLOW_TYP_JWT", "sometimes"), "not true or false"},
		{"max age not a duration", with("BACKOFFICE_OAUTH_JWKS_MAX_AGE", "2"), "not a duration"},
		{"max age too short", with("BACKOFFICE_OAUTH_JWKS_MAX_AGE", "10s"), "shorter than 30s"},
		{"ID token claims switch", with("BACKOFFICE_OAUTH_ALLOW_ID_TOKEN_CLAIMS", "maybe"), "not true or false"},
		{"ID token claims without typ JWT", with("BACKOFFICE_OAUTH_ALLOW_ID_TOKEN_CLAIMS", "true"), "BACKOFFICE_OAUTH_ALLOW_TYP_JWT is not"},
		{"lifetime not a duration", with("BACKOFFICE_OAUTH_MAX_TOKEN_LIFETIME", "1d"), "not a duration"},
		{"lifetime zero", with("BACKOFFICE_OAUTH_MAX_TOKEN_LIFETIME", "0s"), "not a positive duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadConfig(envOf(tc.vars))
			if err == nil {
				_, _, err = cfg.OAuth.verifierConfig()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want %q", err, tc.want)
			}
		})
	}
}

// serve refuses to start on a configuration the provider answers is wrong (here: a certificate
// nothing trusts), before it opens the database; it starts when the provider cannot be reached,
// and says so.
func TestServeWithAnIdentityProvider(t *testing.T) {
	t.Run("flags override the variables, and a wrong configuration stops serve", func(t *testing.T) {
		untrusted := httptest.NewTLSServer(http.NotFoundHandler())
		defer untrusted.Close()
		e := newTestEnv(t)
		e.vars["BACKOFFICE_OAUTH_ISSUER"] = "https://idp.invalid"
		_, _, err := e.run("serve", "--addr", freeAddr(t), "--oauth-issuer", untrusted.URL, "--oauth-audience", "backoffice")
		if err == nil || !strings.Contains(err.Error(), "not trusted") || !strings.Contains(err.Error(), "SSL_CERT_FILE") {
			t.Fatalf("serve = %v; want a refusal to start naming the untrusted certificate and SSL_CERT_FILE", err)
		}
		plain := httptest.NewServer(http.NotFoundHandler())
		defer plain.Close()
		issuer := "https://" + strings.TrimPrefix(plain.URL, "http://")
		// Bounded: a serve that took the server for an unreachable provider would serve on.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		err = Run(ctx, Env{Args: []string{"serve", "--addr", freeAddr(t), "--oauth-issuer", issuer, "--oauth-audience", "backoffice"},
			Getenv: func(k string) string { return e.vars[k] }, Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard})
		if err == nil || !strings.Contains(err.Error(), "plain HTTP, not TLS") || !strings.Contains(err.Error(), issuer) {
			t.Fatalf("serve = %v; want a refusal to start naming the issuer %s and its server's plain HTTP", err, issuer)
		}
		_, _, err = e.run("serve", "--addr", freeAddr(t), "--oauth-max-token-lifetime", "-1h", "--oauth-audience", "backoffice")
		if err == nil || !strings.Contains(err.Error(), "BACKOFFICE_OAUTH_MAX_TOKEN_LIFETIME") {
			t.Fatalf("serve = %v; want the bad setting named", err)
		}
		_, _, err = e.run("serve", "--addr", freeAddr(t), "--oauth-audience", "backoffice", "--oauth-user-match", "mail")
		if err == nil || !strings.Contains(err.Error(), "BACKOFFICE_OAUTH_USER_MATCH") {
			t.Fatalf("serve = %v; want the bad setting named", err)
		}
	})
	t.Run("unreachable: serves, says so, API keys work", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := ln.Addr().String()
		ln.Close() // nothing listens there now
		e := newTestEnv(t)
		if _, _, err := e.run("import", e.writeDataset("demo.json", importableDemo(time.Now().UTC()))); err != nil {
			t.Fatal(err)
		}
		e.vars["BACKOFFICE_OAUTH_ISSUER"] = "https://" + closed
		e.vars["BACKOFFICE_OAUTH_AUDIENCE"] = "backoffice"
		addr := freeAddr(t)
		_, logs, stop := background(func(k string) string { return e.vars[k] }, "serve", "--addr", addr)
		stopped := false
		defer func() {
			if !stopped {
				_ = stop()
			}
		}()
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/crm/leads/"+demoLead.String()+"/service-acceptance", nil)
		req.Header.Set("Authorization", "Api-Key "+importedStaffKey)
		var res *http.Response
		for range 300 {
			if res, err = http.DefaultClient.Do(req); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("serve did not come up: %v\n%s", err, logs.String())
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("an API key beside an unreachable provider: %d", res.StatusCode)
		}
		if !strings.Contains(logs.String(), "identity provider unreachable at start: serving") {
			t.Errorf("serve did not say the provider is unreachable:\n%s", logs.String())
		}
		stopped = true
		if err := stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
}
