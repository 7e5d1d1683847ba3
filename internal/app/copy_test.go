package app

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"backoffice/internal/checkpoint"
	"backoffice/internal/testdb"
)

// demoSSN is the SSN of the demo's principal demoPrincipal.
const demoSSN = "123-45-6789"

// serveRequests runs serve on e's configuration until it answers, sends each GET with its
// Authorization header, stops it (which signs a checkpoint of what was written) and returns the
// answers' statuses and bodies.
func serveRequests(t *testing.T, e *testEnv, reqs [][2]string) (statuses []int, bodies []string) {
	t.Helper()
	addr := freeAddr(t)
	_, stderr, stop := background(func(k string) string { return e.vars[k] }, "serve", "--addr", addr)
	for _, r := range reqs {
		var resp *http.Response
		for start := time.Now(); time.Since(start) < time.Minute; time.Sleep(20 * time.Millisecond) {
			req, _ := http.NewRequest(http.MethodGet, "http://"+addr+r[0], nil)
			req.Header.Set("Authorization", r[1])
			var err error
			if resp, err = http.DefaultClient.Do(req); err == nil {
				break
			}
		}
		if resp == nil {
			stop()
			t.Fatalf("serve did not answer:\n%s", stderr)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		statuses, bodies = append(statuses, resp.StatusCode), append(bodies, string(body))
	}
	if err := stop(); err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr)
	}
	return statuses, bodies
}

// A deployment copied to the other engine carries on there: with no master key to copy, the
// target serves the old API keys (one imported, one issued by the command line) and the old
// session, opens the same SSN, its audit trail verifies against the same checkpoints file, and
// serve on the target goes on signing into that file, which still verifies. A second copy into it
// is refused.
func TestCopyCarriesADeploymentAcross(t *testing.T) {
	for _, pair := range [][2]string{{"sqlite", "postgres"}, {"postgres", "sqlite"}} {
		t.Run(pair[0]+"-to-"+pair[1], func(t *testing.T) {
			e := newTestEnv(t)
			e.vars["BACKOFFICE_DATABASE_URL"] = testdb.URL(t, pair[0])
			checkpoints := filepath.Join(e.dir, "checkpoints.jsonl")
			e.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = checkpoints
			if _, _, err := e.run("import", e.writeDataset("demo.json", importableDemo(time.Now().UTC()))); err != nil {
				t.Fatal(err)
			}
			issued, _, err := e.run("apikey", "create", "--user", "00000000-0000-4000-8000-000000000101", "--name", "laptop")
			if err != nil {
				t.Fatal(err)
			}
			issued = strings.TrimSpace(issued)
			decrypt := "/v1/crm/leads/" + string(demoLead) + "/principals/" + string(demoPrincipal) + "/decrypt/ssn"
			statuses, bodies := serveRequests(t, e, [][2]string{{decrypt, "Api-Key " + importedStaffKey}, {"/v1/audit-events", "Api-Key " + issued}})
			if statuses[0] != 200 || statuses[1] != 200 || !strings.Contains(bodies[0], demoSSN) {
				t.Fatalf("on the source: %v %q", statuses, bodies)
			}

			target := testdb.URL(t, pair[1])
			source, key := e.vars["BACKOFFICE_DATABASE_URL"], e.vars["BACKOFFICE_MASTER_KEY"]
			delete(e.vars, "BACKOFFICE_MASTER_KEY")
			out, progress, err := e.run("copy", "--to", target)
			if err != nil {
				t.Fatalf("copy without a master key: %v\n%s", err, progress)
			}
			if !strings.Contains(out, "from "+pair[0]+" to "+pair[1]) || !strings.Contains(progress, "copied audit_events: ") {
				t.Errorf("copy said:\n%s%s", out, progress)
			}

			if file, ok := strings.CutPrefix(target, "sqlite:"); ok {
				// Nothing of the copy's holds a secret in the clear: the target's files neither.
				for _, name := range []string{file, file + "-wal"} {
					data, err := os.ReadFile(name)
					if err != nil && !errors.Is(err, fs.ErrNotExist) {
						t.Fatal(err)
					}
					for _, secret := range []string{demoSSN, issued, importedStaffKey} {
						if bytes.Contains(data, []byte(secret)) {
							t.Errorf("%s holds %q in the clear", name, secret)
						}
					}
				}
			}
			e.vars["BACKOFFICE_DATABASE_URL"], e.vars["BACKOFFICE_MASTER_KEY"] = target, key
			if out, _, err := e.run("audit", "verify"); err != nil || !strings.Contains(out, "checkpoints: 1 matched") {
				t.Fatalf("audit verify on the target with the source's checkpoints: %v\n%s", err, out)
			}
			statuses, bodies = serveRequests(t, e, [][2]string{{decrypt, "Api-Key " + issued}, {decrypt, "Api-Key " + importedStaffKey}, {decrypt, "Bearer " + importedSessionToken}})
			for i := range statuses {
				if statuses[i] != 200 || !strings.Contains(bodies[i], demoSSN) {
					t.Errorf("decrypt on the target with the source's key %d: %d %s", i, statuses[i], bodies[i])
				}
			}
			read, err := checkpoint.ReadFile(checkpoints)
			if err != nil || len(read.Entries) != 2 {
				t.Fatalf("checkpoints after serve on the target: %d, %v; want the source's and the target's", len(read.Entries), err)
			}
			if out, _, err := e.run("audit", "verify"); err != nil || !strings.Contains(out, "checkpoints: 2 matched") {
				t.Fatalf("audit verify on the target after it served: %v\n%s", err, out)
			}

			e.vars["BACKOFFICE_DATABASE_URL"] = source
			_, _, err = e.run("copy", "--to", target)
			var report bytes.Buffer
			if code := Report(&report, err); code != 1 || !strings.Contains(report.String(), "not empty") || !strings.Contains(report.String(), "nothing was copied") {
				t.Errorf("a second copy into the target: exit %d, %s", code, report.String())
			}
		})
	}
}

// A copy needs --to, and refuses to copy a database into itself.
func TestCopyCommandLine(t *testing.T) {
	e := newTestEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"copy"}, "want --to URL"},
		{[]string{"copy", "--to", e.vars["BACKOFFICE_DATABASE_URL"]}, "names the database to copy from"},
		{[]string{"copy", "--to", "sqlite:x.db", "extra"}, "unexpected argument"},
	} {
		_, _, err := e.run(c.args...)
		var report bytes.Buffer
		if code := Report(&report, err); code != 2 || !strings.Contains(report.String(), c.want) {
			t.Errorf("%v: exit %d, %s", c.args, code, report.String())
		}
	}
}

// A URL shown in an error or a log line carries no password, given in its user part or as a query
// parameter.
func TestRedactedURLHidesPasswords(t *testing.T) {
	for _, s := range []string{
		"postgres://app:s3cretPW@db.example:5432/backoffice?sslmode=disable",
		"postgres://app@db.example/backoffice?sslmode=disable&password=s3cretPW",
		"http://user:s3cretPW@gateway.example/",
		"postgres://app@db.example/backoffice?sslmode=disable&password=s3cretPW;x=1",
		"postgres://app@db.example/backoffice?password=s3cretPW%zz",
		"postgres://app@db.example/backoffice#password=s3cretPW",
	} {
		if got := redactedURL(s); strings.Contains(got, "s3cretPW") || !strings.Contains(got, "db.example") && !strings.Contains(got, "gateway.example") {
			t.Errorf("redactedURL(%q) = %q", s, got)
		}
		if got := shownURL(s); strings.Contains(got, "s3cretPW") {
			t.Errorf("shownURL(%q) = %q", s, got)
		}
	}
}

// A URL that does not parse cannot be redacted, so it is not shown at all: its password may be
// what keeps it from parsing (a "%" not followed by two hex digits).
func TestAURLThatDoesNotParseIsNotShown(t *testing.T) {
	s := "postgres://app:s3cret%zzPW@db.example/backoffice"
	if got := redactedURL(s); got != "(a URL that does not parse)" {
		t.Errorf("redactedURL(%q) = %q", s, got)
	}
	if got := shownURL(s); got != "the --to URL" {
		t.Errorf("shownURL(%q) = %q", s, got)
	}
	if got := redactedURL(""); got != "" {
		t.Errorf("no URL shown as %q", got)
	}
	// A connection string of key=value words parses, as a path: not shown either.
	s = "host=db.example password=s3cretPW dbname=backoffice"
	if got := redactedURL(s); got != "(a URL that does not parse)" {
		t.Errorf("redactedURL(%q) = %q", s, got)
	}
}
