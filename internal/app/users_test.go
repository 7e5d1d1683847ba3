package app

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
)

// The user commands, attacked through the API a running server answers: a user made on the
// command line authenticates with a key issued to it, a permission withdrawn is refused (403), a
// disabled user's key is refused (401) from the next request on, and enabled again it works.
func TestUserCommands(t *testing.T) {
	e := newCredentialEnv(t)
	out, stderr, err := e.run("user", "create", "--email", "Ana@Example.com", "--partner", string(testPartner),
		"--permission", "service_acceptance.read", "--permission", "sam_action_logs.read")
	if err != nil {
		t.Fatalf("user create: %v\n%s", err, stderr)
	}
	id := strings.TrimSuffix(out, "\n")
	if _, err := domain.ParseID(id); err != nil {
		t.Fatalf("user create printed %q; want the new id alone", out)
	}
	key := strings.TrimSuffix(e.mustRun("apikey", "create", "--user", id), "\n")
	if got := e.probe("Api-Key " + key); got != http.StatusNotFound {
		t.Fatalf("the new user's key: status %d, want it to authenticate and be allowed (404 for the unknown lead)", got)
	}
	row := listRow(t, e.mustRun("user", "list"), id)
	if want := []string{id, "Ana@Example.com", string(testPartner), "service_acceptance.read", "sam_action_logs.read", "-", "-"}; strings.Join(row, " ") != strings.Join(want, " ") {
		t.Errorf("user list row = %q; want %q", row, want)
	}

	if out := e.mustRun("user", "withdraw", id, "service_acceptance.read"); !strings.Contains(out, "permissions [sam_action_logs.read]") {
		t.Errorf("user withdraw printed %q", out)
	}
	if got := e.probe("Api-Key " + key); got != http.StatusForbidden {
		t.Errorf("after the withdrawal: status %d, want 403", got)
	}
	e.mustRun("user", "grant", id, "service_acceptance.read", "principals.decrypt")
	if got := e.probe("Api-Key " + key); got != http.StatusNotFound {
		t.Errorf("after the grant: status %d, want 404", got)
	}
	if out := e.mustRun("user", "disable", id); !strings.Contains(out, "disabled") {
		t.Errorf("user disable printed %q", out)
	}
	if got := e.probe("Api-Key " + key); got != http.StatusUnauthorized {
		t.Errorf("disabled user's key: status %d, want 401", got)
	}
	if out := e.mustRun("user", "disable", id); !strings.Contains(out, "that way already") {
		t.Errorf("a second disable printed %q; want that it changed nothing", out)
	}
	if row := listRow(t, e.mustRun("user", "list"), id); row[len(row)-1] != "disabled" {
		t.Errorf("disabled user lists as %q", row)
	}
	e.mustRun("user", "enable", id, "--actor", string(testStaff))
	if got := e.probe("Api-Key " + key); got != http.StatusNotFound {
		t.Errorf("enabled again: status %d, want 404", got)
	}

	for _, tc := range []struct {
		action string
		actor  domain.ID
		detail string
	}{
		{actionUserCreate, domain.SystemActorID, `email "Ana@Example.com", partner ` + string(testPartner) + `, permissions [service_acceptance.read sam_action_logs.read]`},
		{actionUserWithdraw, domain.SystemActorID, "withdrew service_acceptance.read; now [sam_action_logs.read]"},
		{actionUserGrant, domain.SystemActorID, "granted service_acceptance.read principals.decrypt; now [sam_action_logs.read service_acceptance.read principals.decrypt]"},
		{actionUserDisable, domain.SystemActorID, "disabled: every credential of the user is refused"},
		{actionUserEnable, testStaff, "enabled"},
	} {
		events := auditEvents(t, e.cli, tc.action)
		if len(events) != 1 || events[0].TargetID != id || events[0].ActorUserID != tc.actor || events[0].Detail != tc.detail {
			t.Errorf("%s events = %+v; want one on user %s by %s: %q", tc.action, events, id, tc.actor, tc.detail)
		}
	}
}

func TestUserCommandRefusals(t *testing.T) {
	e := newCredentialEnv(t)
	tests := []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{"user", "create"}, true, "--email is required"},
		{[]string{"user", "create", "--email", "no-at-sign"}, true, "--email: not an email address"},
		// An email is shown in user list's table and written in audit details: printable text only.
		{[]string{"user", "create", "--email", "a\xff@b.example"}, true, "--email: not valid UTF-8"},
		{[]string{"user", "create", "--email", "a\a@b.example"}, true, "--email: holds a control character (U+0007)"},
		{[]string{"user", "create", "--email", "a@b.example\x1b[2J"}, true, "--email: holds a control character (U+001B)"},
		{[]string{"user", "create", "--email", "a\u0085@b.example"}, true, "--email: holds a control character (U+0085)"},
		// Within a file's limit for a string, so that an export of the user imports.
		{[]string{"user", "create", "--email", strings.Repeat("a", 250) + "@b.example"}, true, "--email: longer than 255 characters (260)"},
		{[]string{"user", "create", "--email", "a@b.example", "--permission", "audit.read"}, true,
			`unknown permission "audit.read"; want device_parameters.push sam_action_logs.read service_acceptance.read principals.decrypt merchant_documents.delete audit_events.read *`},
		{[]string{"user", "create", "--email", "a@b.example", "--partner", "nope"}, true, `--partner: not a uuid: "nope"`},
		{[]string{"user", "create", "--email", "a@b.example", "--partner", string(domain.NewID())}, false, "--partner: no partner with id"},
		{[]string{"user", "create", "--email", "a@b.example", "--id", "x"}, true, `--id: not a uuid: "x"`},
		{[]string{"user", "create", "--email", "a@b.example", "--id", string(testStaff)}, false, "a user has the id " + string(testStaff)},
		{[]string{"user", "create", "--email", "a@b.example", "--external-id", " "}, true, "--external-id: required, must not be empty"},
		{[]string{"user", "grant", string(testStaff)}, true, "want an ID and a permission or more"},
		{[]string{"user", "grant", string(testStaff), "everything"}, true, `unknown permission "everything"`},
		{[]string{"user", "grant", string(domain.NewID()), "*"}, false, "no user with id"},
		{[]string{"user", "withdraw", string(testStaff), "principals.decrypt"}, false, "holds * (every permission): withdraw * and grant the ones to keep"},
		{[]string{"user", "disable"}, true, "want one ID"},
		{[]string{"user", "disable", "x"}, true, "not a uuid"},
		{[]string{"user", "enable", string(domain.NewID())}, false, "no user with id"},
		{[]string{"user", "list", "extra"}, true, "takes no arguments"},
		{[]string{"user", "remove"}, true, `unknown command "remove": want create, list, disable, enable, grant, withdraw`},
	}
	for _, tt := range tests {
		_, _, err := e.run(tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) || errors.Is(err, ErrUsage) != tt.usage {
			t.Errorf("backoffice %s: %v; want an error saying %q (usage error: %v)", strings.Join(tt.args, " "), err, tt.want, tt.usage)
		}
	}
	e.mustRun("user", "create", "--email", "twice@example.com")
	if _, _, err := e.run("user", "create", "--email", "TWICE@example.com"); err == nil || !strings.Contains(err.Error(), "--email: TWICE@example.com is taken") {
		t.Errorf("a second user with the email: %v", err)
	}
	if list := e.mustRun("user", "list"); strings.Count(list, "\n") != 3 {
		t.Errorf("refused commands changed the users:\n%s", list)
	}
	if events := auditEvents(t, e.cli, actionUserCreate); len(events) != 1 {
		t.Errorf("refused commands wrote events: %+v", events)
	}
}

// What a sync does to users made on the command line (docs/dataset.md): import --upsert replaces
// a user whose id its file holds, whole (permissions and disabled flag are the file's), and leaves
// every other user as it was.
func TestUpsertOverUsersOfTheCommandLine(t *testing.T) {
	e := newCredentialEnv(t)
	synced := strings.TrimSpace(e.mustRun("user", "create", "--email", "synced@example.com", "--permission", "*"))
	local := strings.TrimSpace(e.mustRun("user", "create", "--email", "local@example.com", "--permission", "sam_action_logs.read"))
	e.mustRun("user", "disable", synced)
	e.mustRun("user", "disable", local)

	path := filepath.Join(t.TempDir(), "sync.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := dataset.Write(f, &dataset.Dataset{Users: []domain.User{{ID: domain.ID(synced), Email: "synced@example.com",
		Permissions: []domain.Permission{domain.PermReadServiceAcceptance}}}}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	e.mustRun("import", "--upsert", path)

	list := e.mustRun("user", "list")
	if row := listRow(t, list, synced); strings.Join(row[2:], " ") != "- (staff) service_acceptance.read - -" {
		t.Errorf("the synced user after the sync: %q; want the file's permissions, enabled (the file has no disabled)", row)
	}
	if row := listRow(t, list, local); strings.Join(row[2:], " ") != "- (staff) sam_action_logs.read - disabled" {
		t.Errorf("the user the file does not hold after the sync: %q; want it as it was", row)
	}
}
