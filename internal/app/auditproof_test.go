package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"backoffice/internal/checkpoint"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// sqlOn changes the database behind the service's back, as someone with database access would.
func sqlOn(t *testing.T, url string, queries ...string) {
	t.Helper()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, q := range queries {
		if _, err := st.DB().ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
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
	return out
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
		wantVerify(t, c, nil, "checkpoints: 2 matched")
		wantVerify(t, c, nil, "intact: 6 events")
		// The same with a ring that was never told about the rewrap: cannot check, not broken.
		c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k3")
		wantVerify(t, c, ErrCannotCheck, "CANNOT CHECK")
		c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2")

		delete(c.vars, "BACKOFFICE_AUDIT_CHECKPOINTS")
		sqlOn(t, url, `UPDATE audit_events SET detail = 'nothing to see' WHERE seq = 2`)
		wantVerify(t, c, errAuditChainBroken, "not the ones this anchor fixed")
		wantVerify(t, c, errAuditChainBroken, "broken at seq 3", "--checkpoints", file)
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
		wantVerify(t, c, nil, "intact: 2 events") // the database alone cannot tell
		wantVerify(t, c, errAuditChainBroken, "its tail was cut off", "--checkpoints", file)
		c.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = file // read by default when configured
		wantVerify(t, c, errAuditChainBroken, "its tail was cut off")
		c.mustRun("apikey", "create", "--user", string(testStaff)) // a new seq 3
		wantVerify(t, c, errAuditChainBroken, "not the one the checkpoint")
		delete(c.vars, "BACKOFFICE_AUDIT_CHECKPOINTS")
		// A file that is gone, or altered, cannot be checked: that is not "intact".
		wantVerify(t, c, ErrCannotCheck, "CANNOT CHECK", "--checkpoints", file+".missing")
		altered := strings.Replace(readFile(t, file), `"seq":3`, `"seq":2`, 1)
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
		entries, err := checkpoint.ReadFile(file)
		if err != nil || len(entries) != 2 || entries[1].Seq != 4 || entries[1].Prev != entries[0].ID() {
			t.Fatalf("two chained checkpoints: %+v %v", entries, err)
		}
		if !strings.Contains(logs.String(), `"msg":"audit checkpoint","seq":4`) {
			t.Errorf("no structured log line of the checkpoint:\n%s", logs.String())
		}
		sqlOn(t, url, `DELETE FROM audit_events WHERE seq >= 3`)
		c.mustRun("apikey", "create", "--user", string(testStaff))
		c.mustRun("apikey", "create", "--user", string(testStaff)) // seq 3 and 4 again, other events
		cp.tick(context.Background())
		if entries, _ := checkpoint.ReadFile(file); len(entries) != 2 {
			t.Fatalf("signed the cut chain: %d checkpoints", len(entries))
		}
		if !strings.Contains(logs.String(), `"level":"ERROR","msg":"audit checkpoint not signed"`) {
			t.Errorf("no error logged:\n%s", logs.String())
		}
		wantVerify(t, c, errAuditChainBroken, "broken at seq", "--checkpoints", file)
	})
}

// An auditor with an export, the checkpoints and the public key, and no master key or database.
func TestAuditVerifyExportOffline(t *testing.T) {
	c, url := auditCLI(t, "sqlite")
	file := filepath.Join(t.TempDir(), "checkpoints.jsonl")
	signCheckpoint(t, c, file)
	pub := strings.TrimSpace(c.mustRun("audit", "public-key"))
	export := filepath.Join(t.TempDir(), "export.json")
	c.mustRun("export", export)
	auditor := &cli{t: t, vars: map[string]string{}}
	args := []string{"--export", export, "--checkpoints", file, "--public-key", pub}
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
	wantVerify(t, auditor, errAuditChainBroken, "broken at seq 3", args...)
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
	return cp.last
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
		done := 0
		for i := 0; i < 500 && done < reads; i++ { // until serving, then reads of the trail (an event each)
			req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/audit-events", nil)
			req.Header.Set("Authorization", "Api-Key "+importedStaffKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			resp.Body.Close()
			done++
		}
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
	entries, err := checkpoint.ReadFile(file)
	if err != nil || len(entries) != 1 || entries[0].Seq != 3 {
		t.Fatalf("checkpoints after serve stopped: %+v %v; want one of seq 3", entries, err)
	}
	if strings.Contains(logs, "is not set") {
		t.Errorf("serve warned with a checkpoints file:\n%s", logs)
	}
	if out, _, err := e.run("audit", "verify"); err != nil || !strings.Contains(out, "checkpoints: 1 matched") {
		t.Fatalf("verify with the serve's checkpoints: %v\n%s", err, out)
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
		wantVerify(t, c, ErrCannotCheck, "not sealed")
		// A command that knows the checkpoints leaves it unsealed: it was sealed before them.
		c.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = file
		c.mustRun("apikey", "create", "--user", string(testStaff))
		wantVerify(t, c, errAuditChainBroken, "broken at seq 3")
		delete(c.vars, "BACKOFFICE_AUDIT_CHECKPOINTS")
		wantVerify(t, c, ErrCannotCheck, "not sealed")
		// One that does not seals it, and the database alone then looks whole.
		c.mustRun("apikey", "create", "--user", string(testStaff))
		wantVerify(t, c, nil, "the first 3 from before the chain")
		wantVerify(t, c, errAuditChainBroken, "broken at seq 3", "--checkpoints", file)
	})
}
