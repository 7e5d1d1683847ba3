package app

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"backoffice/internal/domain"
	"backoffice/internal/testdb"
)

var verifiedHash = regexp.MustCompile(`(?m)^hash: ([0-9a-f]{64})$`)

// auditCLI is a database with audit events written by the commands themselves: two API keys
// issued, one revoked.
func auditCLI(t *testing.T, engine string) (*cli, string) {
	url := testdb.URL(t, engine)
	c := newCLI(t, url, "k1")
	c.importFile(testDataset(0))
	for range 2 {
		c.mustRun("apikey", "create", "--user", string(testStaff))
	}
	keys := listRow(t, c.mustRun("apikey", "list", "--user", string(testStaff)), "-")
	c.mustRun("apikey", "revoke", keys[0])
	return c, url
}

func TestAuditListCommand(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			c, _ := auditCLI(t, engine)
			out := c.mustRun("audit", "list", "--format", "json")
			var events []domain.AuditEvent
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var e domain.AuditEvent
				if err := json.Unmarshal([]byte(line), &e); err != nil {
					t.Fatalf("not a JSON line: %q: %v", line, err)
				}
				events = append(events, e)
			}
			if len(events) != 3 || events[0].Action != actionAPIKeyRevoke || events[0].Seq != 3 || events[2].Seq != 1 {
				t.Fatalf("newest first, 3 events: %+v", events)
			}
			out = c.mustRun("audit", "list", "--action", actionAPIKeyCreate, "--actor-user-id", string(domain.SystemActorID))
			if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], "SEQ") || !strings.Contains(lines[1], actionAPIKeyCreate) {
				t.Fatalf("table of the two creations:\n%s", out)
			}
			if out := c.mustRun("audit", "list", "--limit", "1", "--format", "json"); strings.Count(out, "\n") != 1 {
				t.Fatalf("--limit 1:\n%s", out)
			}
			for flag, value := range map[string]string{"--outcome": "maybe", "--from": "yesterday", "--target-id": "x", "--format": "xml"} {
				_, _, err := c.run("audit", "list", flag, value)
				if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), flag) {
					t.Errorf("audit list %s %s: %v", flag, value, err)
				}
			}
		})
	}
}

func TestAuditVerifyCommand(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			c, url := auditCLI(t, engine)
			out := c.mustRun("audit", "verify")
			m := verifiedHash.FindStringSubmatch(out)
			if !strings.HasPrefix(out, "intact: 3 events") || m == nil {
				t.Fatalf("verify of an intact chain:\n%s", out)
			}
			c.mustRun("audit", "verify", "--head", m[1])
			if _, _, err := c.run("audit", "verify", "--head", strings.Repeat("0", 64)); !errors.Is(err, errAuditChainBroken) {
				t.Fatalf("verify --head with a link not in the chain: %v", err)
			}
			// A key rotated in: old links still verify, new ones are made under the new key.
			c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2", "k1")
			c.mustRun("apikey", "create", "--user", string(testStaff))
			c.mustRun("audit", "verify", "--head", m[1])

			if _, err := testdb.SQL(t, url).ExecContext(context.Background(), `UPDATE audit_events SET detail = 'nothing to see' WHERE seq = 2`); err != nil {
				t.Fatal(err)
			}
			out, _, err := c.run("audit", "verify")
			if !errors.Is(err, errAuditChainBroken) || !strings.Contains(out, "broken at seq 2") {
				t.Fatalf("verify of an altered row: %v\n%s", err, out)
			}
		})
	}
}

// Commands that write audit events need the ring their links are made under.
func TestAuditWritersNeedTheRing(t *testing.T) {
	c := newCLI(t, testdb.URL(t, "sqlite"), "k1")
	c.importFile(testDataset(0))
	delete(c.vars, "BACKOFFICE_MASTER_KEYS")
	_, _, err := c.run("apikey", "create", "--user", string(testStaff))
	if err == nil || !strings.Contains(err.Error(), "audit events are chained under the master key ring") {
		t.Fatalf("apikey create without a ring: %v", err)
	}
}
