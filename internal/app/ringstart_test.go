package app

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/testdb"
)

// startServe runs serve with c's variables: its log, and its error when it stops by itself, or
// nil once it listens (then it is stopped).
func startServe(t *testing.T, c *cli) (logs string, err error) {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Env{Args: []string{"serve", "--addr", addr}, Getenv: envOf(c.vars), Stdin: strings.NewReader(""), Stdout: &lockedBuffer{}, Stderr: stderr})
	}()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("serve stopped by itself without an error:\n%s", stderr.String())
			}
			return stderr.String(), err
		default:
		}
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("serve: %v", err)
			}
			return stderr.String(), nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("serve neither listened nor stopped:\n%s", stderr.String())
	return "", nil
}

// exported is the database as export writes it with the ring of keys ids: what a refused start
// must leave as it was.
func exported(t *testing.T, url string, ids ...string) string {
	t.Helper()
	return newCLI(t, url, ids...).mustRun("export", "-", "--include-secrets")
}

// A ring that cannot continue the trail does not start: serve, import and keys rewrap with a ring
// that lacks the key of the trail's head, or a key sealing stored SSNs, refuse before they write
// anything, naming the key ids missing; with the ring the data needs, they run.
func TestARingThatCannotContinueTheTrailDoesNotStart(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			url := testdb.URL(t, engine)
			c := newCLI(t, url, "k1")
			c.importFile(testDataset(2)) // 2 SSNs under k1
			c.mustRun("apikey", "create", "--user", string(testStaff))
			before := exported(t, url, "k1")

			// Another ring altogether: the head's key and the SSNs' key are missing.
			c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("other")
			logs, err := startServe(t, c)
			if err == nil || !strings.Contains(err.Error(), "k1 (2 SSNs, audit links seq 1 to 1 with the trail's head, the genesis's seal)") ||
				!strings.Contains(err.Error(), "nothing was written") {
				t.Fatalf("serve with another ring: %v; want it refused, naming k1 and what needs it\n%s", err, logs)
			}
			ds := &dataset.Dataset{Principals: []domain.Principal{{ID: testPrincipal(7), LeadID: testLead, FirstName: "F", LastName: "L", SSN: ptr(testSSN(7))}}}
			path := filepath.Join(t.TempDir(), "more.json")
			f, _ := os.Create(path)
			if err := dataset.Write(f, ds); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if _, _, err := c.run("import", path); err == nil || !strings.Contains(err.Error(), "k1 (2 SSNs") {
				t.Errorf("import with another ring: %v; want it refused, naming k1", err)
			}
			if _, _, err := c.run("keys", "rewrap"); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
				t.Errorf("keys rewrap with another ring: %v; want it refused", err)
			}
			// keys status says the same, and exits 1 on it: one rule.
			if status, _, err := c.run("keys", "status"); err == nil || !strings.Contains(status, "k1 MISSING") && !strings.Contains(squash(status), "k1 MISSING 2") {
				t.Errorf("keys status with another ring: %v\n%s", err, status)
			}
			if after := exported(t, url, "k1"); after != before {
				t.Errorf("a refused start changed the database")
			}
			c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k1")
			wantVerify(t, c, nil, "intact: 1 events")

			// The trail's keys held, an SSN's key missing: refused too.
			c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2", "k1")
			c.mustRun("keys", "rewrap") // the SSNs and the genesis move to k2, an anchor under k2
			c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k1", "k2")
			c.importFile(ds) // one SSN under k1 again
			c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2")
			if logs, err := startServe(t, c); err == nil || !strings.Contains(err.Error(), "k1 (1 SSN)") {
				t.Fatalf("serve without the key of an SSN: %v\n%s", err, logs)
			}

			// The documented rotation: once rewrap moved everything, the new key alone starts.
			c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2", "k1")
			c.mustRun("keys", "rewrap")
			c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2")
			if logs, err := startServe(t, c); err != nil {
				t.Fatalf("serve with the ring the data needs: %v\n%s", err, logs)
			}
			c.importFile(&dataset.Dataset{Principals: []domain.Principal{{ID: testPrincipal(8), LeadID: testLead, FirstName: "F", LastName: "L", SSN: ptr(testSSN(8))}}})
			wantVerify(t, c, nil, "intact")
		})
	}
}
