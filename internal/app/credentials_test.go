package app

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// credentialEnv is a database with the test records, the CLI over it, and the real API served
// from it, which keeps running across the commands (as a replica would).
type credentialEnv struct {
	*cli
	st    *store.Store
	probe func(authorization string) int
}

func newCredentialEnv(t *testing.T) *credentialEnv {
	url := testdb.URL(t, "sqlite")
	c := newCLI(t, url, "k1")
	c.importFile(testDataset(0))
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	st.SetChainSigner(testdb.Ring(t, "k1"))
	srv, _ := serveAPI(t, st, testdb.Ring(t, "k1"))
	probe := func(authorization string) int {
		t.Helper()
		status, _, err := get(t, srv, "/v1/crm/leads/"+string(domain.NewID())+"/service-acceptance", authorization)
		if err != nil {
			t.Fatal(err)
		}
		return status
	}
	return &credentialEnv{cli: c, st: st, probe: probe}
}

// listOnceUsed is apikey list once it shows the key of prefix used (its last-use stamp, written
// after the request in the background).
func (e *credentialEnv) listOnceUsed(t *testing.T, prefix string) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		list := e.mustRun("apikey", "list")
		if row := listRow(t, list, prefix); row[6] != "-" || time.Now().After(deadline) {
			return list
		}
	}
}

var issuedKeyShape = regexp.MustCompile(`^bo_([a-z2-7]{8})_[a-z2-7]{52}$`)

// listRow returns the apikey list row that contains s, with its columns.
func listRow(t *testing.T, list, s string) []string {
	t.Helper()
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, s) {
			return strings.Fields(line)
		}
	}
	t.Fatalf("no row with %q in:\n%s", s, list)
	return nil
}

func TestAPIKeyCreateListRevoke(t *testing.T) {
	e := newCredentialEnv(t)
	out, stderr, err := e.run("apikey", "create", "--user", string(testStaff), "--name", "ci-deploy", "--expires", "90d")
	if err != nil {
		t.Fatalf("apikey create: %v\n%s", err, stderr)
	}
	key := strings.TrimSuffix(out, "\n")
	m := issuedKeyShape.FindStringSubmatch(key)
	if m == nil {
		t.Fatalf("apikey create printed %q; want the key alone, bo_<prefix>_<secret>", out)
	}
	prefix, secret := m[1], key[len("bo_")+8+1:]
	if strings.Contains(stderr, secret) {
		t.Error("the key's secret also went to standard error")
	}
	if got := e.probe("Api-Key " + key); got != http.StatusNotFound {
		t.Fatalf("new key: status %d, want it to authenticate (404 for the unknown lead)", got)
	}
	if got := e.probe("Bearer " + key); got != http.StatusUnauthorized {
		t.Errorf("new key as a session token: status %d, want 401", got)
	}
	list := e.listOnceUsed(t, prefix) // the request's last-use stamp is written in the background
	if strings.Contains(list, secret) {
		t.Fatalf("apikey list shows the secret:\n%s", list)
	}
	row := listRow(t, list, prefix)
	id := row[0]
	if row[1] != string(testStaff) || row[2] != "ci-deploy" || row[4] == "-" || row[5] == "never" || row[6] == "-" || row[7] != "-" {
		t.Errorf("row of the new key = %v; want user, name, created, expires, last used set, not revoked", row)
	}
	if row := listRow(t, list, string(testImportKey)); row[3] != "-" || row[4] != "-" {
		t.Errorf("row of the imported key = %v; want no prefix and no creation time", row)
	}
	for _, form := range []string{prefix, "bo_" + prefix, key} {
		if byPrefix := e.mustRun("apikey", "list", "--prefix", form); strings.Count(byPrefix, "\n") != 2 || !strings.Contains(byPrefix, id) {
			t.Errorf("apikey list --prefix %s… = %q; want the header and the one key", form[:min(len(form), 11)], byPrefix)
		}
	}
	if byUser := e.mustRun("apikey", "list", "--user", string(testStaff)); strings.Count(byUser, "\n") != 3 {
		t.Errorf("apikey list --user = %q; want the header and both keys", byUser)
	}

	if out := e.mustRun("apikey", "revoke", id); !strings.Contains(out, "revoked API key "+id) {
		t.Errorf("apikey revoke printed %q", out)
	}
	// The same running server, on its very next request: nothing may remember the key.
	if got := e.probe("Api-Key " + key); got != http.StatusUnauthorized {
		t.Errorf("revoked key: status %d, want 401", got)
	}
	if got := e.probe("Api-Key " + testStaffKey); got != http.StatusNotFound {
		t.Errorf("the other key after the revocation: status %d, want it to still authenticate", got)
	}
	if out := e.mustRun("apikey", "revoke", id); !strings.Contains(out, "already revoked") {
		t.Errorf("second revoke printed %q; want already revoked", out)
	}
	if row := listRow(t, e.mustRun("apikey", "list"), id); row[7] == "-" {
		t.Errorf("revoked key lists as %v; want its revocation time", row)
	}
	for _, action := range []string{actionAPIKeyCreate, actionAPIKeyRevoke} {
		events := auditEvents(t, e.cli, action)
		if len(events) != 1 || events[0].TargetID != id || events[0].ActorUserID != domain.SystemActorID {
			t.Errorf("%s events = %+v; want one, on key %s, by the system actor", action, events, id)
		}
	}
}

func TestSessionCreateRevoke(t *testing.T) {
	e := newCredentialEnv(t)
	out, stderr, err := e.run("session", "create", "--user", string(testStaff), "--ttl", "1h", "--actor", string(testStaff))
	if err != nil {
		t.Fatalf("session create: %v\n%s", err, stderr)
	}
	token := strings.TrimSuffix(out, "\n")
	if !regexp.MustCompile(`^bos_[a-z2-7]{52}$`).MatchString(token) {
		t.Fatalf("session create printed %q; want the token alone", out)
	}
	if got := e.probe("Bearer " + token); got != http.StatusNotFound {
		t.Fatalf("new session: status %d, want it to authenticate", got)
	}
	id := regexp.MustCompile(`created session (\S+)`).FindStringSubmatch(stderr)
	if id == nil {
		t.Fatalf("session create did not name the session: %q", stderr)
	}
	if row := listRow(t, e.mustRun("session", "list", "--user", string(testStaff)), id[1]); row[1] != string(testStaff) || row[4] != "-" {
		t.Errorf("session list row = %q; want the user and no revocation", row)
	}
	e.mustRun("session", "revoke", id[1])
	if got := e.probe("Bearer " + token); got != http.StatusUnauthorized {
		t.Errorf("revoked session: status %d, want 401", got)
	}
	list := e.mustRun("session", "list")
	if strings.Contains(list, token) || strings.Contains(list, token[len("bos_"):]) {
		t.Fatalf("session list shows the token:\n%s", list)
	}
	if row := listRow(t, list, id[1]); row[4] == "-" {
		t.Errorf("session list row after the revocation = %q; want its time", row)
	}
	if other := e.mustRun("session", "list", "--user", string(domain.NewID())); strings.Count(other, "\n") != 1 {
		t.Errorf("session list of a user without sessions = %q; want the header alone", other)
	}
	for _, action := range []string{actionSessionCreate, actionSessionRevoke} {
		events := auditEvents(t, e.cli, action)
		want := testStaff
		if action == actionSessionRevoke {
			want = domain.SystemActorID
		}
		if len(events) != 1 || events[0].TargetID != id[1] || events[0].ActorUserID != want {
			t.Errorf("%s events = %+v; want one, on session %s, by %s", action, events, id[1], want)
		}
	}
}

func TestCredentialCommandRefusals(t *testing.T) {
	e := newCredentialEnv(t)
	yesterday := time.Now().AddDate(0, 0, -1).Format(time.DateOnly)
	tests := []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{"apikey", "create"}, true, "--user is required"},
		{[]string{"apikey", "create", "--user", "nope"}, true, "not a uuid"},
		{[]string{"apikey", "create", "--user", string(domain.NewID())}, false, "no user with id"},
		{[]string{"apikey", "create", "--user", string(testStaff), "--expires", "soon"}, true, "--expires"},
		{[]string{"apikey", "create", "--user", string(testStaff), "--expires", yesterday}, true, "not in the future"},
		{[]string{"apikey", "create", "--user", string(testStaff), "--name", "tab\there"}, true, "printable"},
		{[]string{"apikey", "create", "--user", string(testStaff), "--actor", string(domain.NewID())}, false, "--actor: no user"},
		{[]string{"apikey", "list", "--prefix", "NOT-A-PREFIX"}, true, "--prefix"},
		{[]string{"apikey", "revoke"}, true, "want one ID"},
		{[]string{"apikey", "revoke", "x"}, true, "not a uuid"},
		{[]string{"apikey", "revoke", string(domain.NewID())}, false, "no API key with id"},
		{[]string{"apikey", "rotate"}, true, `unknown command "rotate": want create, list, revoke`},
		{[]string{"session", "create", "--user", string(testStaff), "--ttl", "-1h"}, true, "--ttl"},
		{[]string{"session", "revoke", string(domain.NewID())}, false, "no session with id"},
		{[]string{"session", "list", "--user", "nope"}, true, "not a uuid"},
		{[]string{"session", "list", "extra"}, true, "takes no arguments"},
		{[]string{"session", "rotate"}, true, `unknown command "rotate": want create, list, revoke`},
		{[]string{"keys", "rewrap", "--batch", "0"}, true, "--batch"},
	}
	for _, tt := range tests {
		_, _, err := e.run(tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) || errors.Is(err, ErrUsage) != tt.usage {
			t.Errorf("backoffice %s: %v; want an error saying %q (usage error: %v)", strings.Join(tt.args, " "), err, tt.want, tt.usage)
		}
	}
	if list := e.mustRun("apikey", "list"); strings.Count(list, "\n") != 2 {
		t.Errorf("refused commands created keys:\n%s", list)
	}
}

func TestParseExpiry(t *testing.T) {
	now := time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"720h":                 now.Add(720 * time.Hour),
		"90d":                  now.AddDate(0, 0, 90),
		"2027-01-31":           time.Date(2027, 1, 31, 0, 0, 0, 0, time.UTC),
		"2027-01-31T12:00:00Z": time.Date(2027, 1, 31, 12, 0, 0, 0, time.UTC),
	} {
		got, err := parseExpiry(in, now)
		if err != nil || got == nil || !got.Equal(want) {
			t.Errorf("parseExpiry(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if got, err := parseExpiry("", now); got != nil || err != nil {
		t.Errorf("parseExpiry(\"\") = %v, %v; want never", got, err)
	}
	for _, bad := range []string{"0d", "-1d", "1.5d", "-1h", "0s", "2026-11-21", "tomorrow", "213503983d", "99999999999d", "2914000d"} {
		if _, err := parseExpiry(bad, now); err == nil {
			t.Errorf("parseExpiry(%q) accepted it", bad)
		}
	}
}
