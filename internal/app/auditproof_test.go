package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"backoffice/internal/auditlog"
	"backoffice/internal/checkpoint"
	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/testdb"
)

// sqlOn changes the database behind the service's back, as someone with database access would.
func sqlOn(t *testing.T, url string, queries ...string) {
	t.Helper()
	db := testdb.SQL(t, url)
	for _, q := range queries {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// treeAnew has the database attacker make the audit tree anew from the events as they now are,
// as they can without a key when every event has none (the leaves of events without a key have a
// zero tag) or when they copy the service's code and key: the attacks below are on the chain, and
// a tree left as it was would catch them first.
func treeAnew(t *testing.T, url string) {
	t.Helper()
	sqlOn(t, url, `DELETE FROM audit_tree`)
	st := testdb.OpenAsIs(t, url)
	st.SetChainSigner(testdb.Ring(t, "k1"))
	if _, err := st.BuildAuditTree(context.Background()); err != nil {
		t.Fatal(err)
	}
	st.Close()
}

// wantVerify runs audit verify and checks its outcome: the error it wraps (nil: intact) and
// words its output must hold; it returns the output.
func wantVerify(t *testing.T, c *cli, want error, words string, args ...string) string {
	t.Helper()
	out, errOut, err := c.run(append([]string{"audit", "verify"}, args...)...)
	if (want == nil && err != nil) || (want != nil && !errors.Is(err, want)) || !strings.Contains(out+errOut, words) {
		t.Fatalf("audit verify %s: %v, want %v saying %q\n%s%s", strings.Join(args, " "), err, want, words, out, errOut)
	}
	if want == ErrCannotCheck && strings.Contains(out, "BROKEN") {
		t.Fatalf("cannot check must not say BROKEN:\n%s", out)
	}
	documentedAnswer(t, Report(&strings.Builder{}, err), out)
	return out
}

// verifyAnswers are the phrases docs/compliance.md lists for audit verify's first line, by exit
// status (its table "Every answer of audit verify").
var verifyAnswers = sync.OnceValues(func() (map[int][]string, error) {
	b, err := os.ReadFile("../../docs/compliance.md")
	if err != nil {
		return nil, err
	}
	_, table, _ := strings.Cut(string(b), "## Every answer of audit verify")
	table, _, _ = strings.Cut(table, "\n## ")
	out := map[int][]string{}
	row := regexp.MustCompile("(?m)^\\| ([0-3]) \\| `([^`]+)` \\|")
	for _, m := range row.FindAllStringSubmatch(table, -1) {
		code := int(m[1][0] - '0')
		out[code] = append(out[code], m[2])
	}
	if len(out[0]) == 0 || len(out[1]) == 0 || len(out[3]) == 0 {
		return nil, fmt.Errorf("docs/compliance.md lists no answers of audit verify")
	}
	return out, nil
})

// documentedAnswer fails the test when the first line of verify's output, given with exit status
// code, is none of the answers docs/compliance.md lists for it.
func documentedAnswer(t *testing.T, code int, out string) {
	t.Helper()
	answers, err := verifyAnswers()
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(out, "\n")
	if code == 2 || first == "" {
		return // usage errors go to standard error
	}
	for _, a := range answers[code] {
		if matchesTemplate(first, a) {
			return
		}
	}
	t.Errorf("audit verify answered (exit %d) %q, which docs/compliance.md does not list for that exit status", code, first)
}

// placeholders are the words that stand for a value in the table's phrases.
var placeholders = regexp.MustCompile(`\b(N\+1-M|A-B|N|M|A|B|K|X)\b`)

// matchesTemplate tells whether line holds phrase, its placeholders standing for any word.
func matchesTemplate(line, phrase string) bool {
	var re strings.Builder
	last := 0
	for _, m := range placeholders.FindAllStringIndex(phrase, -1) {
		re.WriteString(regexp.QuoteMeta(phrase[last:m[0]]) + `\S+?`)
		last = m[1]
	}
	re.WriteString(regexp.QuoteMeta(phrase[last:]))
	return regexp.MustCompile(re.String()).MatchString(line)
}

// Exit statuses a script can use: 0 intact, 1 broken, 3 cannot check, 2 usage.
func TestAuditVerifyExitStatuses(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{{nil, 0}, {errAuditChainBroken, 1}, {ErrCannotCheck, 3}, {usagef("x"), 2}} {
		if got := Report(&strings.Builder{}, c.err); got != c.want {
			t.Errorf("exit status of %v = %d, want %d", c.err, got, c.want)
		}
	}
	c, _ := auditCLI(t, "sqlite")
	for _, head := range []string{"3f1c", strings.Repeat("g", 64), strings.Repeat("0", 63)} {
		if _, _, err := c.run("audit", "verify", "--head", head); !errors.Is(err, ErrUsage) {
			t.Errorf("--head %q: %v, want a usage error", head, err)
		}
	}
	c.vars["BACKOFFICE_MASTER_KEYS"] = ""
	wantVerify(t, c, ErrCannotCheck, "no master key")
}

// The attack of the issue through the command line: links stripped, events removed and
// renumbered, one altered, a decrypt forged; then a service writing on top.
func TestAuditVerifyCatchesStrippedChain(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		for range 3 {
			c.mustRun("apikey", "create", "--user", string(testStaff))
		}
		sqlOn(t, url, `UPDATE audit_events SET hash = NULL, chain_key_id = NULL`,
			`DELETE FROM audit_events WHERE seq <= 2`, `UPDATE audit_events SET seq = seq - 2`,
			`UPDATE audit_events SET actor_user_id = '`+string(testPrincipal(1))+`' WHERE seq = 1`,
			fmt.Sprintf(`INSERT INTO audit_events (id, at, actor_user_id, action, target_id, outcome, detail, seq)
				VALUES ('%s', 1, '%s', 'principal.decrypt', 'x', 'granted', 'field ssn', 5)`, testdb.FixtureID(9500), testStaff))
		treeAnew(t, url)
		wantVerify(t, c, errAuditChainBroken, "broken at seq 1")
		c.mustRun("apikey", "create", "--user", string(testStaff))
		wantVerify(t, c, errAuditChainBroken, "broken at seq 1")
	})
}

// The documented rotation: rotate, rewrap, remove the old key. keys status says what still needs
// the old key until rewrap has anchored its links; then verify passes with the new key alone,
// and altering a pre-rotation event still fails it, also when relinked with the (leaked) old key.
func TestAuditProofSurvivesRotation(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		c.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = file
		signCheckpoint(t, c, file) // under k1
		c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2", "k1")
		status := c.mustRun("keys", "status")
		if !strings.Contains(status, "3 audit events are linked under key k1") || strings.Contains(status, "can be removed") {
			t.Fatalf("keys status before rewrap calls k1 removable, or does not say why not:\n%s", status)
		}
		c.mustRun("keys", "rewrap")
		if status := c.mustRun("keys", "status"); !strings.Contains(status, "newest audit checkpoint") || strings.Contains(status, "can be removed") {
			t.Fatalf("keys status with the newest checkpoint under k1:\n%s", status)
		}
		signCheckpoint(t, c, file) // under k2, naming the one under k1
		if status := c.mustRun("keys", "status"); !strings.Contains(status, "Nothing needs key k1 any more") {
			t.Fatalf("keys status after rewrap and a checkpoint under k2:\n%s", status)
		}
		c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2")
		if status := c.mustRun("keys", "status"); !strings.Contains(status, "Key k1 is not in the ring: its 3 audit links (seq 1 to 3) are covered by the anchor at seq 5, under key k2") {
			t.Errorf("keys status once k1 left the ring:\n%s", status)
		}
		wantVerify(t, c, nil, "checkpoints: 2 matched")
		wantVerify(t, c, nil, "intact: 6 events")
		// The same with a ring that was never told about the rewrap: cannot check, not broken.
		c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k3")
		wantVerify(t, c, ErrCannotCheck, "CANNOT CHECK")
		c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2")

		delete(c.vars, "BACKOFFICE_AUDIT_CHECKPOINTS")
		sqlOn(t, url, `UPDATE audit_events SET detail = 'nothing to see' WHERE seq = 2`)
		// Without k1 the links before the rotation are proven by the anchor's digest alone: some
		// event of those it fixed differs, which is as precise as a digest can be.
		wantVerify(t, c, errAuditChainBroken, "broken in seq 1-3: an event in seq 1-3 differs from what the anchor at seq 5")
		wantVerify(t, c, errAuditChainBroken, "differs from what the checkpoint of", "--checkpoints", file)
	})
}

// Checkpoints kept outside the database catch a tail cut off at rest, which the database alone
// cannot show; verify reads several files and fails on any.
func TestAuditCheckpointsCatchCutTail(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		cp := signCheckpoint(t, c, file)
		if cp.Seq != 3 {
			t.Fatalf("checkpoint of seq %d, want 3", cp.Seq)
		}
		wantVerify(t, c, nil, "checkpoints: 1 matched", "--checkpoints", file)
		sqlOn(t, url, `DELETE FROM audit_events WHERE seq = 3`)
		treeAnew(t, url)
		wantVerify(t, c, nil, "intact: 2 events") // the database alone cannot tell
		wantVerify(t, c, errAuditChainBroken, "its tail was cut off", "--checkpoints", file)
		c.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = file // read by default when configured
		wantVerify(t, c, errAuditChainBroken, "its tail was cut off")
		c.mustRun("apikey", "create", "--user", string(testStaff)) // a new seq 3
		wantVerify(t, c, errAuditChainBroken, "an event in seq 1-3 differs from what the checkpoint of")
		delete(c.vars, "BACKOFFICE_AUDIT_CHECKPOINTS")
		// A file that is gone, or altered, cannot be checked: that is not "intact".
		wantVerify(t, c, ErrCannotCheck, "CANNOT CHECK", "--checkpoints", file+".missing")
		altered := strings.Replace(readFile(t, file), "\n3\n", "\n2\n", 1)
		os.WriteFile(file, []byte(altered), 0o600)
		wantVerify(t, c, ErrCannotCheck, "does not hold", "--checkpoints", file)
	})
}

// A running service whose chain is cut under it logs an error and does not sign the shorter
// chain; verify against what it signed before finds the cut.
func TestCheckpointerRefusesACutChain(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		st := testdb.OpenAsIs(t, url)
		var logs lockedBuffer
		cp, err := newCheckpointer(file, st, testdb.Ring(t, "k1"), newLogger(&logs, 0))
		if err != nil {
			t.Fatal(err)
		}
		cp.tick(context.Background())
		c.mustRun("apikey", "create", "--user", string(testStaff))
		cp.tick(context.Background()) // seq 4, naming the first
		read, err := checkpoint.ReadFile(file)
		entries := read.Entries
		if err != nil || len(entries) != 2 || entries[1].Seq != 4 || entries[1].Prev != entries[0].ID() {
			t.Fatalf("two chained checkpoints: %+v %v", entries, err)
		}
		if !strings.Contains(logs.String(), `"msg":"audit checkpoint","seq":4`) {
			t.Errorf("no structured log line of the checkpoint:\n%s", logs.String())
		}
		sqlOn(t, url, `DELETE FROM audit_events WHERE seq >= 3`)
		treeAnew(t, url)
		c.mustRun("apikey", "create", "--user", string(testStaff))
		c.mustRun("apikey", "create", "--user", string(testStaff)) // seq 3 and 4 again, other events
		cp.tick(context.Background())
		if read, _ := checkpoint.ReadFile(file); len(read.Entries) != 2 {
			t.Fatalf("signed the cut chain: %d checkpoints", len(entries))
		}
		if !strings.Contains(logs.String(), `"level":"ERROR","msg":"audit checkpoint not signed"`) {
			t.Errorf("no error logged:\n%s", logs.String())
		}
		wantVerify(t, c, errAuditChainBroken, "differs from what the checkpoint of", "--checkpoints", file)
	})
}

// offlineAuditor is an auditor who holds an export, a checkpoints file and the public key, and no
// master key or database; args are its audit verify flags.
type offlineAuditor struct {
	export, file, pub string
	auditor           *cli
	args              []string
}

// offlineAudit is a trail on SQLite (its CLI and database URL) with one checkpoint signed into a
// file, and the auditor of its export; the caller writes the export (c.mustRun("export", ...)).
func offlineAudit(t *testing.T) (*cli, string, offlineAuditor) {
	c, url := auditCLI(t, "sqlite")
	a := offlineAuditor{file: filepath.Join(t.TempDir(), "checkpoints.jsonl"), export: filepath.Join(t.TempDir(), "export.json"),
		auditor: &cli{t: t, vars: map[string]string{}}}
	signCheckpoint(t, c, a.file)
	a.pub = strings.TrimSpace(c.mustRun("audit", "public-key"))
	a.args = []string{"--export", a.export, "--checkpoints", a.file, "--public-key", a.pub}
	return c, url, a
}

// An auditor with an export, the checkpoints and the public key, and no master key or database.
func TestAuditVerifyExportOffline(t *testing.T) {
	c, url, a := offlineAudit(t)
	export, file, pub, auditor, args := a.export, a.file, a.pub, a.auditor, a.args
	c.mustRun("export", export)
	wantVerify(t, auditor, nil, "checkpoints: 1 matched", args...)
	if _, _, err := auditor.run("audit", "verify", "--export", export); !errors.Is(err, ErrUsage) {
		t.Errorf("--export alone: %v, want a usage error", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	os.WriteFile(empty, nil, 0o600)
	wantVerify(t, auditor, ErrCannotCheck, "no checkpoint covers", "--export", export, "--checkpoints", empty, "--public-key", pub)
	wrong := "k9:" + strings.SplitN(pub, ":", 2)[1]
	wantVerify(t, auditor, ErrCannotCheck, "is signed under a key given", "--export", export, "--checkpoints", file, "--public-key", wrong)

	sqlOn(t, url, `UPDATE audit_events SET detail = 'nothing to see' WHERE seq = 2`)
	c.mustRun("export", export)
	// Without the key, the digest of the checkpoint at seq 3 is all that shows it: the auditor is
	// told the range, not an event that was not touched.
	out := wantVerify(t, auditor, errAuditChainBroken, "BROKEN: audit chain broken in seq 1-3: an event in seq 1-3 differs from what the checkpoint of", args...)
	if strings.Contains(out, "at seq") {
		t.Errorf("offline verify names one event:\n%s", out)
	}
	// A cut tail names the events that are missing.
	sqlOn(t, url, `DELETE FROM audit_events WHERE seq >= 2`)
	c.mustRun("export", export)
	_, errOut, err := auditor.run(append([]string{"audit", "verify"}, args...)...)
	if !errors.Is(err, errAuditChainBroken) || !strings.Contains(err.Error(), "seq 2-3 missing") {
		t.Errorf("offline verify of a cut tail: %v %s; want seq 2-3 missing", err, errOut)
	}
}

// An export read as it streams gives the answer of its events in seq order, whatever order the
// file has them in (an export edited, or sorted by another field): a file out of order is walked
// sorted, not judged by its order.
func TestAuditVerifyExportInAnyOrder(t *testing.T) {
	c, url, a := offlineAudit(t)
	export, auditor, args := a.export, a.auditor, a.args

	c.mustRun("export", export)
	wantVerify(t, auditor, nil, "checkpoints: 1 matched", args...)
	reverseAuditEvents(t, export)
	wantVerify(t, auditor, nil, "checkpoints: 1 matched", args...)

	sqlOn(t, url, `UPDATE audit_events SET detail = 'nothing to see' WHERE seq = 2`)
	c.mustRun("export", export)
	const broken = "BROKEN: audit chain broken in seq 1-3: an event in seq 1-3 differs from what the checkpoint of"
	wantVerify(t, auditor, errAuditChainBroken, broken, args...)
	reverseAuditEvents(t, export)
	wantVerify(t, auditor, errAuditChainBroken, broken, args...)

	// The file is still read and checked whole: a bad record after the events fails it.
	b := []byte(strings.Replace(readFile(t, export), `"detail": "nothing to see"`, `"detail": 7`, 1))
	if err := os.WriteFile(export, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := auditor.run(append([]string{"audit", "verify"}, args...)...); err == nil || !strings.Contains(err.Error(), "--export: auditEvents[") {
		t.Errorf("verify of an export with a malformed event: %v", err)
	}
}

// reverseAuditEvents rewrites the export at path with its audit events in the reverse order.
func reverseAuditEvents(t *testing.T, path string) {
	t.Helper()
	var file map[string]json.RawMessage
	if err := json.Unmarshal([]byte(readFile(t, path)), &file); err != nil {
		t.Fatal(err)
	}
	var events []json.RawMessage
	if err := json.Unmarshal(file["auditEvents"], &events); err != nil || len(events) < 2 {
		t.Fatalf("the export holds %d audit events: %v", len(events), err)
	}
	slices.Reverse(events)
	var err error
	if file["auditEvents"], err = json.Marshal(events); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// eachAuditCLI runs fn on each engine with auditCLI's database (3 events under key k1), its url,
// and a path for a checkpoints file.
func eachAuditCLI(t *testing.T, fn func(t *testing.T, engine string, c *cli, url, file string)) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			c, url := auditCLI(t, engine)
			fn(t, engine, c, url, filepath.Join(t.TempDir(), "checkpoints.jsonl"))
		})
	}
}

// signCheckpoint signs a checkpoint of the database c uses into file, as serve's ticker does.
func signCheckpoint(t *testing.T, c *cli, file string) checkpoint.Checkpoint {
	t.Helper()
	st := testdb.OpenAsIs(t, c.vars["BACKOFFICE_DATABASE_URL"])
	ring, err := masterRing(Config{MasterKeys: secret(c.vars["BACKOFFICE_MASTER_KEYS"])})
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	cp, err := newCheckpointer(file, st, ring, newLogger(&logs, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.sign(context.Background()); err != nil {
		t.Fatal(err)
	}
	read, err := checkpoint.ReadFile(file)
	if err != nil || len(read.Entries) == 0 {
		t.Fatalf("no checkpoint in %s: %v", file, err)
	}
	return read.Entries[len(read.Entries)-1].Checkpoint
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An import of chained audit events (an export's) is accepted only if the chain verifies: an
// event altered, renumbered or given a made-up link in the file is refused, naming it.
func TestImportRefusesABrokenAuditChain(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		export := filepath.Join(t.TempDir(), "export.json")
		c.mustRun("export", export)
		good := readFile(t, export)
		fresh := newCLI(t, testdb.URL(t, engine), "k1")
		for name, change := range map[string]func(string) string{
			"altered":    func(s string) string { return strings.Replace(s, actionAPIKeyRevoke, actionAPIKeyCreate, 1) },
			"renumbered": func(s string) string { return regexp.MustCompile(`"seq": ?3\b`).ReplaceAllString(s, `"seq": 4`) },
		} {
			bad := filepath.Join(t.TempDir(), name+".json")
			if changed := change(good); changed == good {
				t.Fatalf("%s: the change did not apply", name)
			} else if err := os.WriteFile(bad, []byte(changed), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, _, err := fresh.run("import", bad); err == nil || !strings.Contains(err.Error(), "audit chain") {
				t.Errorf("import of an export with an event %s: %v; want it refused", name, err)
			}
		}
		fresh.mustRun("import", export)
		wantVerify(t, fresh, nil, "intact: 3 events")
	})
}

// readTrailServed reads the audit trail from the serve at addr reads times, one after another, as
// the imported staff user (an event each), waiting until it serves; it returns how many reads
// were answered 200.
func readTrailServed(t *testing.T, addr string, reads int) int {
	t.Helper()
	done := 0
	for ; done < reads; done++ {
		if status, _ := getWhenServed(t, addr, "/v1/audit-events"); status != http.StatusOK {
			t.Errorf("audit events: %d", status)
			break
		}
	}
	return done
}

// getWhenServed GETs path from the serve at addr as the imported staff user, waiting (up to five
// seconds) until the serve listens: its status and body, a status of 0 when it never answered.
func getWhenServed(t *testing.T, addr, path string) (int, []byte) {
	t.Helper()
	for i := 0; i < 500; i++ {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		req.Header.Set("Authorization", "Api-Key "+importedStaffKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, body
	}
	return 0, nil
}

// serve signs a checkpoint of every event it wrote when it stops, into BACKOFFICE_AUDIT_CHECKPOINTS
// and its log; without the variable it warns at start that a cut tail cannot be caught.
func TestServeSignsCheckpointsOnShutdown(t *testing.T) {
	e := newTestEnv(t)
	if _, _, err := e.run("import", e.writeDataset("demo.json", importableDemo(time.Now().UTC()))); err != nil {
		t.Fatal(err)
	}
	serveAndRead := func(reads int) string {
		addr := freeAddr(t)
		_, stderr, stop := background(func(k string) string { return e.vars[k] }, "serve", "--addr", addr)
		done := readTrailServed(t, addr, reads)
		if err := stop(); err != nil || done != reads {
			t.Fatalf("serve: %v, %d reads\n%s", err, done, stderr)
		}
		return stderr.String()
	}
	logs := serveAndRead(1)
	if !strings.Contains(logs, "BACKOFFICE_AUDIT_CHECKPOINTS is not set") || !strings.Contains(logs, `"msg":"audit checkpoint","component":"audit checkpoints","seq":1,`) {
		t.Errorf("serve without a checkpoints file: no warning, or no checkpoint in the log:\n%s", logs)
	}

	// A file serve cannot write to stops it at start, not at its first checkpoint.
	e.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = filepath.Join(e.dir, "missing", "checkpoints.jsonl")
	if _, _, err := e.run("serve", "--addr", freeAddr(t)); err == nil || !strings.Contains(err.Error(), "BACKOFFICE_AUDIT_CHECKPOINTS") {
		t.Fatalf("serve with a checkpoints file in a missing folder: %v", err)
	}

	file := filepath.Join(e.dir, "checkpoints.jsonl")
	e.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = file
	logs = serveAndRead(2)
	read, err := checkpoint.ReadFile(file)
	entries := read.Entries
	if err != nil || len(entries) != 1 || entries[0].Seq != 3 {
		t.Fatalf("checkpoints after serve stopped: %+v %v; want one of seq 3", entries, err)
	}
	if strings.Contains(logs, "is not set") {
		t.Errorf("serve warned with a checkpoints file:\n%s", logs)
	}
	if out, _, err := e.run("audit", "verify"); err != nil || !strings.Contains(out, "checkpoints: 1 matched") {
		t.Fatalf("verify with the serve's checkpoints: %v\n%s", err, out)
	}

	// A serve started on the file serves its last checkpoint, the note as signed.
	addr := freeAddr(t)
	_, stderr, stop := background(func(k string) string { return e.vars[k] }, "serve", "--addr", addr)
	status, body := getWhenServed(t, addr, "/v1/audit-log/checkpoint")
	if err := stop(); err != nil || status != http.StatusOK || string(body) != string(entries[0].Note) {
		t.Fatalf("GET /v1/audit-log/checkpoint: %d %q, want the file's note; serve: %v\n%s", status, body, err, stderr)
	}
}

// childRewrapVar, set, makes TestRewrapChildProcess run `keys rewrap` as its own process, for a
// test to kill.
const childRewrapVar = "BACKOFFICE_TEST_REWRAP_CHILD"

func TestRewrapChildProcess(t *testing.T) {
	if os.Getenv(childRewrapVar) == "" {
		t.Skip("run by TestRewrapKilledLeavesItsEvent")
	}
	env := Env{Args: []string{"keys", "rewrap", "--batch", "1"}, Getenv: os.Getenv, Stdin: strings.NewReader(""), Stdout: os.Stdout, Stderr: os.Stderr}
	os.Exit(Report(os.Stderr, Run(context.Background(), env)))
}

// A rewrap killed outright (kill -9) still leaves its keys.rewrap event: the run is recorded
// before it moves anything. The process is killed after its first batch, while it waits to write
// its progress (its standard error is a pipe no one reads any more), so it cannot have finished.
func TestRewrapKilledLeavesItsEvent(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			url := testdb.URL(t, engine)
			st := testdb.OpenAsIs(t, url)
			st.SetChainSigner(testdb.Ring(t, "old"))
			importDataset(t, st, testDataset(rewrapCount), testdb.Ring(t, "old"))

			cmd := exec.Command(os.Args[0], "-test.run=^TestRewrapChildProcess$")
			cmd.Env = append(os.Environ(), childRewrapVar+"=1", "BACKOFFICE_DATABASE_URL="+url,
				"BACKOFFICE_MASTER_KEYS="+ringSpec("new", "old"), "BACKOFFICE_MASTER_KEY=", "BACKOFFICE_MASTER_KEYS_FILE=", "BACKOFFICE_MASTER_KEY_FILE=")
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewScanner(stderr)
			for lines.Scan() {
				if strings.HasPrefix(lines.Text(), "rewrap: moved") {
					break // its first batch is done
				}
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()

			c := newCLI(t, url, "new", "old")
			events := auditEvents(t, c, actionKeysRewrap)
			if len(events) != 1 || !strings.HasPrefix(events[0].Detail, "started") {
				t.Fatalf("keys.rewrap events after kill -9: %+v; want the started one alone", events)
			}
			wantVerify(t, c, nil, "intact")
		})
	}
}

// What the database alone cannot show, the checkpoints do: every link stripped and the genesis
// reset to an unsealed one naming the newest event makes the trail look like one from before the
// chain, which the next start seals (and warns of); the checkpoints' digests, which cover links
// and key ids, no longer match.
func TestCheckpointsCatchAResetGenesis(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		signCheckpoint(t, c, file)
		sqlOn(t, url, `UPDATE audit_events SET hash = NULL, chain_key_id = NULL`,
			`UPDATE audit_chain_genesis SET last_unlinked_seq = 3, chain_key_id = NULL, mac = NULL`)
		treeAnew(t, url)
		wantVerify(t, c, ErrCannotCheck, "not sealed")
		// A command that knows the checkpoints leaves it unsealed: it was sealed before them.
		c.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = file
		c.mustRun("apikey", "create", "--user", string(testStaff))
		wantVerify(t, c, errAuditChainBroken, "an event in seq 1-3 differs from what the checkpoint of")
		delete(c.vars, "BACKOFFICE_AUDIT_CHECKPOINTS")
		wantVerify(t, c, ErrCannotCheck, "not sealed")
		// One that does not seals it, and the database alone then looks whole.
		c.mustRun("apikey", "create", "--user", string(testStaff))
		wantVerify(t, c, nil, "the first 3 from before the chain")
		wantVerify(t, c, errAuditChainBroken, "an event in seq 1-3 differs from what the checkpoint of", "--checkpoints", file)
	})
}

// The attack on the signers: links after a checkpoint relabelled to a key id no ring holds, and
// one of those events altered (its link kept). Nothing signs or anchors it: serve's next
// checkpoint is refused and logged, keys rewrap refuses, and verify names the first relabelled
// event, before and after; keys status names the made-up key id.
func TestRelabelledTrailIsNeverVouchedFor(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		c.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = file
		signCheckpoint(t, c, file) // of seq 1-3
		for range 3 {
			c.mustRun("apikey", "create", "--user", string(testStaff))
		}
		var logs lockedBuffer
		serving, err := newCheckpointer(file, testdb.OpenAsIs(t, url), testdb.Ring(t, "k1"), newLogger(&logs, 0))
		if err != nil {
			t.Fatal(err)
		}
		sqlOn(t, url, `UPDATE audit_events SET chain_key_id = 'kold' WHERE seq > 3`,
			`UPDATE audit_events SET actor_user_id = '`+string(testPrincipal(7))+`', outcome = 'denied' WHERE seq = 6`)
		serving.tick(context.Background())
		if n := len(fileCheckpoints(t, file)); n != 1 {
			t.Fatalf("serve signed the relabelled trail: %d checkpoints", n)
		}
		if !strings.Contains(logs.String(), `"level":"ERROR","msg":"audit checkpoint not signed"`) || !strings.Contains(logs.String(), "relabelled") {
			t.Errorf("serve's refusal is not logged as an error naming the relabel:\n%s", logs.String())
		}
		wantVerify(t, c, errAuditChainBroken, `broken at seq 4 (event`)
		_, _, err = c.run("keys", "rewrap")
		if !errors.Is(err, errAuditChainBroken) || !strings.Contains(err.Error(), "keys rewrap refused, nothing was changed") || !strings.Contains(err.Error(), "relabelled") {
			t.Fatalf("keys rewrap on the relabelled trail: %v; want it refused, naming the break", err)
		}
		if anchors := auditEvents(t, c, "audit.anchor"); len(anchors) != 0 {
			t.Fatalf("anchored: %+v", anchors)
		}
		out := wantVerify(t, c, errAuditChainBroken, "its link is made under key k1, which the ring holds, but the event names key \"kold\": relabelled")
		if !strings.HasPrefix(out, "BROKEN: audit chain broken at seq 4 (") {
			t.Errorf("verify after the refused rewrap:\n%s", out)
		}
		status, _, err := c.run("keys", "status")
		if err == nil || !strings.Contains(status, "3 audit links (seq 4 to 6) are made under key kold, which is not in the ring") {
			t.Errorf("keys status does not name kold, or exits 0: %v\n%s", err, status)
		}
	})
}

// Without a checkpoints file the same relabel, of every link, is still a break at seq 1, never
// "cannot check"; keys rewrap refuses, and a head recorded before does not make it pass.
func TestRelabelledTrailWithoutCheckpoints(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		out := wantVerify(t, c, nil, "intact: 3 events")
		head := regexp.MustCompile(`hash: ([0-9a-f]{64})`).FindStringSubmatch(out)[1]
		sqlOn(t, url, `UPDATE audit_events SET chain_key_id = 'kold'`,
			`UPDATE audit_events SET outcome = 'denied' WHERE seq = 3`)
		wantVerify(t, c, errAuditChainBroken, "broken at seq 1 (event")
		if _, _, err := c.run("keys", "rewrap"); !errors.Is(err, errAuditChainBroken) {
			t.Fatalf("keys rewrap: %v; want it refused", err)
		}
		wantVerify(t, c, errAuditChainBroken, "relabelled", "--head", head)
		if status, _, _ := c.run("keys", "status"); !strings.Contains(status, "made under key kold") {
			t.Errorf("keys status does not name kold:\n%s", status)
		}
	})
}

// A genesis relabelled to a key id no ring holds is a break, with checkpoints or without.
func TestRelabelledGenesisIsABreak(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		signCheckpoint(t, c, file)
		sqlOn(t, url, `UPDATE audit_chain_genesis SET chain_key_id = 'kold'`)
		wantVerify(t, c, errAuditChainBroken, `broken at seq 1: the genesis record is sealed under key k1 but names key "kold": relabelled`)
		wantVerify(t, c, errAuditChainBroken, "relabelled", "--checkpoints", file)
		if _, _, err := c.run("keys", "rewrap"); !errors.Is(err, errAuditChainBroken) {
			t.Fatalf("keys rewrap: %v; want it refused", err)
		}
		if status, _, _ := c.run("keys", "status"); !strings.Contains(status, "genesis is sealed under key kold") {
			t.Errorf("keys status does not name kold:\n%s", status)
		}
	})
}

// The answers' table of docs/compliance.md is read, and a line it does not list matches none of
// its phrases.
func TestVerifyAnswersAreListed(t *testing.T) {
	answers, err := verifyAnswers()
	if err != nil {
		t.Fatal(err)
	}
	listed := func(code int, line string) bool {
		for _, a := range answers[code] {
			if matchesTemplate(line, a) {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		code int
		line string
		want bool
	}{
		{1, `BROKEN: audit chain broken at seq 4 (event x): its link is made under key k1, which the ring holds, but the event names key "kold": relabelled`, true},
		{1, "BROKEN: audit chain broken in seq 2-3: an event in seq 2-3 differs from what the checkpoint of 2026-11-23T12:00:00Z (f line 1) signed", true},
		{3, `CANNOT CHECK: cannot check the audit chain from seq 1 to 5: the links are made under key "k0", which the ring does not hold, and …`, true},
		{0, "intact: 3 events", true},
		{0, "intact up to seq 3, as far as the keys given prove (--limit-to-keys): seq 4-50 not proved", true},
		{3, "CANNOT CHECK: checkpoints signed under a key not given (k2) were not checked: f lines 2-3 (seq 5-6)", true},
		{3, "CANNOT CHECK: seq 4-6 of the export are covered by no checkpoint checked, and without the master key nothing else proves them", true},
		{0, "intact up to seq 3: seq 4-50 not proved", false},
		{1, "BROKEN: audit chain broken at seq 4: something no one wrote down", false},
		{3, "BROKEN: audit chain broken at seq 4 (event x): its link does not match: the event was altered, inserted, or follows an altered one", false},
	} {
		if got := listed(c.code, c.line); got != c.want {
			t.Errorf("exit %d %q: listed %v, want %v", c.code, c.line, got, c.want)
		}
	}
}

// Anchors are made only by keys rewrap, of a trail it verified: an import that brings one without
// its place in the chain (to be appended as a new event) is refused, and changes nothing.
func TestImportRefusesAnUnplacedAnchor(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			c := newCLI(t, testdb.URL(t, engine), "k1")
			ds := testDataset(0)
			ds.AuditEvents = []domain.AuditEvent{{ID: testdb.FixtureID(9901), At: time.Now().UTC(), ActorUserID: testStaff, Action: auditlog.ActionAnchor,
				TargetID: "audit_events", Outcome: domain.OutcomeGranted, Detail: "events 1 to 1: digest " + strings.Repeat("ab", 32)}}
			path := filepath.Join(t.TempDir(), "anchor.json")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := dataset.Write(f, ds); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if _, _, err := c.run("import", path); err == nil || !strings.Contains(err.Error(), "anchors are made only by `backoffice keys rewrap`") {
				t.Fatalf("import of an anchor without its place: %v; want it refused", err)
			}
			if out, _, _ := c.run("apikey", "list"); strings.Contains(out, string(testImportKey)) {
				t.Fatalf("the refused import left its records:\n%s", out)
			}
		})
	}
}
