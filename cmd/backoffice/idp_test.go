package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"backoffice/client"
	"backoffice/internal/oauth/oauthtest"
)

// A real OAuth 2.0 / OpenID Connect provider: Debian's glewlwyd, started with a database and a
// TLS certificate of its own, configured through its administration API (an OpenID Connect
// plugin signing ES256 access tokens, and confidential clients for the client credentials grant).
// The service trusts its private CA through SSL_CERT_FILE only. The test skips where glewlwyd is
// not installed; CI (.ci/run) installs it.

// glewlwydSchema is the database schema and initial data Debian's package installs.
const glewlwydSchema = "/usr/share/dbconfig-common/data/glewlwyd/install/sqlite3"

// The identity provider's settings for the service.
const (
	idpAudience = "https://backoffice.test" // a resource indicator (RFC 8707) of the provider's
	idpScope    = "backoffice"
	// Client ids are the demo dataset's user ids: sub of a client credentials token is its client.
	idpStaffClient   = "00000000-0000-4000-8000-000000000101"
	idpPartnerClient = "00000000-0000-4000-8000-000000000102"
	idpSecret        = "client-secret-of-the-test-only-0001"
)

// TestRealIdentityProvider gets tokens from glewlwyd the way a service does (client credentials)
// and calls every operation of `backoffice serve` with them through the Go client.
func TestRealIdentityProvider(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs an identity provider")
	}
	bin, err := exec.LookPath("glewlwyd")
	if err != nil {
		t.Skip("glewlwyd is not installed (apt-get install glewlwyd; .ci/run installs it): the test against a real identity provider is skipped")
	}
	if _, err := os.Stat(glewlwydSchema); err != nil {
		t.Skipf("glewlwyd is installed without its database schema (%v): the test against a real identity provider is skipped", err)
	}
	dir := t.TempDir()
	idp := startGlewlwyd(t, bin, dir)
	idp.configure(t)

	backoffice := buildBinary(t, dir)
	// Without its CA in SSL_CERT_FILE nothing trusts the provider's certificate: serve refuses to
	// start, and says what to do.
	untrusting := exec.Command(backoffice, "serve", "--demo", "--addr", freeAddr(t),
		"--oauth-issuer", idp.issuer, "--oauth-audience", idpAudience)
	untrusting.Dir, untrusting.Env = t.TempDir(), withoutCertFile(userEnviron())
	if out, err := untrusting.CombinedOutput(); err == nil || !bytes.Contains(out, []byte("SSL_CERT_FILE")) {
		t.Fatalf("serve with a provider it cannot trust: %v\n%s", err, out)
	}

	addr := freeAddr(t)
	work := filepath.Join(dir, "service")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	srv := exec.Command(backoffice, "serve", "--demo")
	srv.Dir = work
	srv.Env = append(withoutCertFile(userEnviron()), "BACKOFFICE_ADDR="+addr,
		"BACKOFFICE_OAUTH_ISSUER="+idp.issuer, "BACKOFFICE_OAUTH_AUDIENCE="+idpAudience,
		// The provider's CA is trusted through the system's certificate store, as in production.
		"SSL_CERT_FILE="+idp.caFile)
	var logs lockedLog
	srv.Stderr = &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	base := "http://" + addr
	waitUp(t, base)
	if !strings.Contains(logs.String(), "accepting the identity provider's access tokens") {
		t.Fatalf("serve does not accept the provider's tokens:\n%s", logs.String())
	}

	ctx := context.Background()
	staff := &clientCredentials{idp: idp, id: idpStaffClient, resource: idpAudience}
	c, err := client.New(base, client.WithTokenSource(staff.token))
	if err != nil {
		t.Fatal(err)
	}
	const (
		lead, principal = "00000000-0000-4000-8000-000000000301", "00000000-0000-4000-8000-000000000401"
		merchant, doc   = "00000000-0000-4000-8000-000000000501", "00000000-0000-4000-8000-000000000601"
		order, item     = "00000000-0000-4000-8000-000000000801", "00000000-0000-4000-8000-000000001101"
	)
	if _, err := c.PushDeviceParameters(ctx, order, item, client.WithIdempotencyKey("idp-test")); err != nil {
		t.Errorf("push: %v", err)
	}
	if page, err := c.ListSAMActionLogs(ctx, lead, 1, 5); err != nil || len(page.Data) == 0 {
		t.Errorf("SAM action logs: %v", err)
	}
	if sa, err := c.ServiceAcceptance(ctx, lead); err != nil || !sa.Configured {
		t.Errorf("service acceptance: %+v, %v", sa, err)
	}
	if ssn, err := c.DecryptPrincipalSSN(ctx, lead, principal); err != nil || ssn.Reveal() != "123-45-6789" {
		t.Errorf("decrypt: %v", err)
	}
	if err := c.DeleteMerchantDocument(ctx, merchant, doc); err != nil {
		t.Errorf("delete document: %v", err)
	}
	events, err := c.ListAuditEvents(ctx, client.AuditFilter{Action: "principal.decrypt"}, 1, 10)
	if err != nil || len(events.Data) != 1 || events.Data[0].ActorUserID != idpStaffClient {
		t.Errorf("the decrypt's audit event: %+v, %v; want one, by the token's user %s", events, err, idpStaffClient)
	}
	if staff.fetched != 1 {
		t.Errorf("%d tokens fetched for six calls; want one, reused", staff.fetched)
	}

	// Another client's token acts as its own user: a partner agent who may read SAM logs only.
	partner, _ := client.New(base, client.WithTokenSource((&clientCredentials{idp: idp, id: idpPartnerClient, resource: idpAudience}).token))
	_, err = partner.ServiceAcceptance(ctx, lead)
	wantClientError(t, err, http.StatusForbidden, "forbidden")
	_, err = partner.ListSAMActionLogs(ctx, lead, 1, 5)
	wantClientError(t, err, http.StatusNotFound, "not_found") // another partner's lead

	// Refusals, as RFC 6750 says: a token for another audience (no resource asked: the
	// provider's aud is then the scope), and a token whose payload was changed.
	other, err := (&clientCredentials{idp: idp, id: idpStaffClient}).token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := staff.token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The staff token made to speak for the partner agent: the signature no longer covers it.
	parts := strings.Split(tok, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	parts[1] = base64.RawURLEncoding.EncodeToString(bytes.ReplaceAll(payload, []byte(idpStaffClient), []byte(idpPartnerClient)))
	for name, tc := range map[string]struct{ token, reason string }{
		"another audience": {other, "the token's audience does not include this service"},
		"changed":          {strings.Join(parts, "."), "the token's signature does not verify"},
	} {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/crm/leads/"+lead+"/service-acceptance", nil)
		req.Header.Set("Authorization", "Bearer "+tc.token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		challenge := res.Header.Get("WWW-Authenticate")
		if res.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(challenge, `Bearer error="invalid_token", error_description="`+tc.reason) {
			t.Errorf("%s: %d, WWW-Authenticate %q; want 401 invalid_token, %q", name, res.StatusCode, challenge, tc.reason)
		}
	}
	// The provider rotates its key: a token under the new kid is accepted as soon as the service
	// may fetch the key set again (at most one fetch per 10 s), and the old key, gone from the
	// set, is refused from then on, also for the token accepted before.
	idp.rotateKey(t)
	rotated := &clientCredentials{idp: idp, id: idpStaffClient, resource: idpAudience}
	c2, _ := client.New(base, client.WithTokenSource(rotated.token))
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c2.ServiceAcceptance(ctx, lead)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a token under the rotated key is still refused: %v", err)
		}
		time.Sleep(time.Second)
	}
	_, err = c.ServiceAcceptance(ctx, lead) // staff's token, under the old key
	wantClientError(t, err, http.StatusUnauthorized, "unauthenticated")

	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.Wait(); err != nil {
		t.Errorf("serve: %v\n%s", err, logs.String())
	}
	if strings.Contains(logs.String(), parts[2]) {
		t.Error("a token reached the service's log")
	}
}

// withoutCertFile is env without SSL_CERT_FILE and SSL_CERT_DIR.
func withoutCertFile(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "SSL_CERT_FILE=") && !strings.HasPrefix(kv, "SSL_CERT_DIR=") {
			out = append(out, kv)
		}
	}
	return out
}

func wantClientError(t *testing.T, err error, status int, code string) {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) || e.Status != status || e.Code != code {
		t.Errorf("err = %v; want %d %s", err, status, code)
	}
}

// glewlwyd is a running provider and an HTTPS client that trusts it.
type glewlwyd struct {
	base   string // https://127.0.0.1:PORT
	issuer string
	caFile string
	http   *http.Client
	logs   *lockedLog
	// plugin is the OpenID Connect plugin's settings.
	plugin map[string]any
}

// startGlewlwyd makes a CA and a certificate for 127.0.0.1, a database from Debian's schema, and
// a configuration, and starts the provider on a free port until the test ends.
func startGlewlwyd(t *testing.T, bin, dir string) *glewlwyd {
	t.Helper()
	caFile, certFile, keyFile, pool := oauthtest.Certificates(t, dir)
	db := filepath.Join(dir, "glewlwyd.db")
	schema, err := os.ReadFile(glewlwydSchema)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(string(schema)); err != nil {
		t.Fatalf("glewlwyd schema: %v", err)
	}
	conn.Close()
	_, port, _ := net.SplitHostPort(freeAddr(t))
	base := "https://127.0.0.1:" + port
	conf := filepath.Join(dir, "glewlwyd.conf")
	writeFile(t, conf, fmt.Sprintf(`port=%s
external_url="%s"
login_url="login.html"
static_files_path="/usr/share/glewlwyd/webapp/"
api_prefix="api"
allow_origin="*"
log_mode="console"
log_level="INFO"
cookie_secure=1
session_expiration=3600
session_key="GLEWLWYD2_SESSION_ID"
admin_scope="g_admin"
profile_scope="g_profile"
user_module_path="/usr/lib/glewlwyd/user"
client_module_path="/usr/lib/glewlwyd/client"
user_auth_scheme_module_path="/usr/lib/glewlwyd/scheme"
plugin_module_path="/usr/lib/glewlwyd/plugin"
use_secure_connection=true
secure_connection_key_file="%s"
secure_connection_pem_file="%s"
hash_algorithm="SHA512"
database = { type = "sqlite3"; path = "%s"; };
`, port, base, keyFile, certFile, db))
	logs := &lockedLog{}
	cmd := exec.Command(bin, "-c", conf)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("glewlwyd's log:\n%s", logs.String())
		}
	})
	jar, _ := cookiejar.New(nil)
	g := &glewlwyd{base: base, issuer: base + "/api/oidc", caFile: caFile, logs: logs,
		http: &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := g.http.Get(base + "/api/scope/")
		if err == nil {
			res.Body.Close()
			return g
		}
		if time.Now().After(deadline) {
			t.Fatalf("glewlwyd did not come up: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// configure does what an administrator does in glewlwyd's administration pages: an OpenID
// Connect plugin that signs access tokens with an ES256 key and puts a requested resource in
// aud, a scope for the service, and a confidential client per demo user.
func (g *glewlwyd) configure(t *testing.T) {
	t.Helper()
	g.call(t, http.MethodPost, "/api/auth/", map[string]any{"username": "admin", "password": "password"})
	g.plugin = map[string]any{
		"module": "oidc", "name": "oidc", "display_name": "OpenID Connect",
		"parameters": map[string]any{
			"iss": g.issuer, "jwt-type": "ecdsa", "jwt-key-size": "256",
			// Five minutes: access tokens are short-lived, as the service's docs advise.
			"access-token-duration": 300, "refresh-token-duration": 3600, "code-duration": 600, "refresh-token-rolling": true,
			"allow-non-oidc": true, "auth-type-client-enabled": true, "auth-type-code-enabled": true,
			"auth-type-refresh-enabled": true, "auth-type-token-enabled": false, "auth-type-none-enabled": false,
			"auth-type-password-enabled": false, "subject-type": "public",
			"resource-allowed": true, "resource-scope": map[string]any{idpScope: []string{idpAudience}},
			"resource-scope-and-client-property": false,
			"allowed-scope":                      []string{"openid", idpScope},
		},
	}
	g.setSigningKey(t)
	g.call(t, http.MethodPost, "/api/mod/plugin/", g.plugin)
	g.call(t, http.MethodPost, "/api/scope/", map[string]any{"name": idpScope, "display_name": "Back office", "description": "The back-office API", "password_required": false})
	for _, id := range []string{idpStaffClient, idpPartnerClient} {
		g.call(t, http.MethodPost, "/api/client/", map[string]any{
			"client_id": id, "name": "service " + id, "enabled": true, "confidential": true, "password": idpSecret,
			"token_endpoint_auth_method": []string{"client_secret_basic"},
			"authorization_type":         []string{"client_credentials"}, "scope": []string{idpScope}, "redirect_uri": []string{},
		})
	}
}

// setSigningKey puts a new ES256 key in the plugin's settings.
func (g *glewlwyd) setSigningKey(t *testing.T) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	params := g.plugin["parameters"].(map[string]any)
	params["key"] = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	params["cert"] = string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))
}

// rotateKey replaces the plugin's signing key, as an administrator rotating it does: the old key
// leaves the provider's key set, and new tokens carry the new key's kid.
func (g *glewlwyd) rotateKey(t *testing.T) {
	t.Helper()
	g.setSigningKey(t)
	g.call(t, http.MethodPut, "/api/mod/plugin/oidc", g.plugin)
	g.call(t, http.MethodPut, "/api/mod/plugin/oidc/reset", nil)
}

// call sends an administration request and fails the test unless it succeeds.
func (g *glewlwyd) call(t *testing.T, method, path string, body any) {
	t.Helper()
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	req, _ := http.NewRequest(method, g.base+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	res, err := g.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(res.Body)
		t.Fatalf("glewlwyd %s %s: %s %s", method, path, res.Status, msg)
	}
}

// clientCredentials is a token source as a service holds one: it asks the provider's token
// endpoint for a token (RFC 6749 section 4.4) and reuses it until shortly before it expires.
type clientCredentials struct {
	idp      *glewlwyd
	id       string
	resource string // RFC 8707; empty: none asked

	mu      sync.Mutex
	current string
	expires time.Time
	fetched int
}

func (c *clientCredentials) token(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current != "" && time.Until(c.expires) > 30*time.Second {
		return c.current, nil
	}
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {idpScope}}
	if c.resource != "" {
		form.Set("resource", c.resource)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.idp.issuer+"/token/", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(c.id, idpSecret)
	res, err := c.idp.http.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&out) != nil || out.AccessToken == "" {
		return "", fmt.Errorf("token endpoint: %s", res.Status)
	}
	c.current, c.expires = out.AccessToken, time.Now().Add(time.Duration(out.ExpiresIn)*time.Second)
	c.fetched++
	return c.current, nil
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
