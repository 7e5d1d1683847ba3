package app

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"backoffice/internal/checkpoint"
	"backoffice/internal/secrets"
	"backoffice/internal/testdb"
	"backoffice/internal/witness"
	"backoffice/internal/witness/witnesstest"
)

// Serve's checkpoints are cosigned by the witnesses of its policy before they are written:
// litewitness (a witness nobody here wrote) cosigns each as the trail grows, with the consistency
// proof from the last it cosigned, and the note in the file then meets the policy. A second
// database restored from a backup, signing with the same key, is refused by the witness: that
// serve writes its checkpoint all the same, not final, and says so, naming the witness. A witness
// that does not answer is named too, and costs the checkpoint nothing its quorum does not need.
func TestCheckpointsAreWitnessed(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		lw := witnesstest.Start(t) // one a database: the engines' logs share an origin and a key
		ring := ringOf(t, c)
		logVerifier := registerLog(t, lw, ring)
		// A second witness that never answers: the group needs one of the two.
		down := "witness down " + witnessVKey(t, "witness.test/down") + " http://" + freeAddr(t) + "\n"
		policyText := "witness lite " + lw.VKey + " " + lw.URL + "\n" + down + "group any 1 lite down\nquorum any\n"
		policy, err := witness.ParsePolicy([]byte(policyText))
		if err != nil {
			t.Fatal(err)
		}
		main := witnessedCheckpointer(t, file, url, ring, policy)
		main.c.tick(context.Background())
		first := lastNote(t, file)
		wantWitnessed(t, policy, logVerifier, first, true)
		if signed, final := main.c.WitnessStatus(); signed != 3 || final != 3 {
			t.Fatalf("status after the first checkpoint: %d, %d; want 3, 3", signed, final)
		}
		if !strings.Contains(main.logs.String(), `"witness":"down","outcome":"unavailable"`) {
			t.Errorf("the witness that is down is not named:\n%s", main.logs.String())
		}
		// A backup of the database and its checkpoints file, as they are now.
		backupURL, backupFile := testdb.Copy(t, engine, url), filepath.Join(t.TempDir(), "checkpoints")
		if err := os.WriteFile(backupFile, []byte(readFile(t, file)), 0o600); err != nil {
			t.Fatal(err)
		}

		for range 2 {
			c.mustRun("apikey", "create", "--user", string(testStaff))
		}
		main.c.tick(context.Background())
		wantWitnessed(t, policy, logVerifier, lastNote(t, file), true)
		if signed, final := main.c.WitnessStatus(); signed != 5 || final != 5 {
			t.Fatalf("status after the second checkpoint: %d, %d; want 5, 5", signed, final)
		}
		policyFile := filepath.Join(t.TempDir(), "witnesses")
		if err := os.WriteFile(policyFile, []byte(policyText), 0o600); err != nil {
			t.Fatal(err)
		}
		wantVerify(t, c, nil, "witnessed: the checkpoint of", "--checkpoints", file, "--witnesses", policyFile)
		if out := wantVerify(t, c, nil, "cosigned by lite: the policy's quorum", "--checkpoints", file, "--witnesses", policyFile); !strings.HasPrefix(out, "intact: 5 events") {
			t.Errorf("audit verify with the policy:\n%s", out)
		}

		// serve started again on the file, whose last note is cosigned: it carries on from it, and
		// learns from the witness's answer the size it cosigned.
		again := witnessedCheckpointer(t, file, url, ring, policy)
		c.mustRun("apikey", "create", "--user", string(testStaff))
		again.c.tick(context.Background())
		wantWitnessed(t, policy, logVerifier, lastNote(t, file), true)
		if signed, final := again.c.WitnessStatus(); signed != 6 || final != 6 {
			t.Fatalf("status after a restart: %d, %d; want 6, 6\n%s", signed, final, again.logs.String())
		}

		// The backup restored and written to: another history, signed with the same key.
		restored := newCLI(t, backupURL, "k1")
		for range 4 {
			restored.mustRun("apikey", "create", "--user", string(testStaff))
		}
		fork := witnessedCheckpointer(t, backupFile, backupURL, ring, policy)
		fork.c.tick(context.Background())
		wantWitnessed(t, policy, logVerifier, lastNote(t, backupFile), false)
		if signed, final := fork.c.WitnessStatus(); signed != 7 || final != 0 {
			t.Errorf("the restored database's status: %d, %d; want 7, 0", signed, final)
		}
		logs := fork.logs.String()
		for _, want := range []string{`"msg":"audit checkpoint refused by a witness`, `"witness":"lite"`, `"msg":"audit checkpoint not final`} {
			if !strings.Contains(logs, want) {
				t.Errorf("the restored database's serve does not say %s:\n%s", want, logs)
			}
		}
		if fork.answers["lite"] == "cosigned" || fork.checkpoint != 7 || fork.final != 0 {
			t.Errorf("observed: %v, checkpoint %d final %d", fork.answers, fork.checkpoint, fork.final)
		}
		wantVerify(t, restored, ErrCannotCheck, "short of the policy's quorum", "--checkpoints", backupFile, "--witnesses", policyFile)
	})
}

// A witness that does not answer holds up the signer, off the request path, and nothing else:
// audit events are written meanwhile, and the checkpoint is written once the witness answers (or
// its timeout passes), not final.
func TestASlowWitnessHoldsUpNoEvent(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		ring := ringOf(t, c)
		release, asked := make(chan struct{}), make(chan struct{}, 1)
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case asked <- struct{}{}:
			default:
			}
			select {
			case <-release:
			case <-r.Context().Done():
			}
			http.Error(w, "down", http.StatusServiceUnavailable)
		}))
		answer := sync.OnceFunc(func() { close(release) })
		t.Cleanup(slow.Close)
		t.Cleanup(answer)
		policy, err := witness.ParsePolicy([]byte("witness slow " + witnessVKey(t, "witness.test/slow") + " " + slow.URL + "\nquorum slow\n"))
		if err != nil {
			t.Fatal(err)
		}
		w := witnessedCheckpointer(t, file, url, ring, policy)
		w.c.witnesses.client.Timeout = time.Minute // the witness answers when the test says
		ticked := make(chan struct{})
		go func() {
			defer close(ticked)
			w.c.tick(context.Background())
		}()
		// The checkpoint the witness holds is fixed once it is asked; the events come after.
		select {
		case <-asked:
		case <-ticked:
			t.Fatal("the signer never asked the witness")
		}
		for range 3 {
			c.mustRun("apikey", "create", "--user", string(testStaff))
		}
		select {
		case <-ticked:
			t.Fatal("the signer did not wait for the witness")
		default:
		}
		answer()
		<-ticked
		if signed, final := w.c.WitnessStatus(); signed != 3 || final != 0 {
			t.Errorf("status: %d, %d; want 3, 0", signed, final)
		}
		if n := len(lastNote(t, file)); n == 0 {
			t.Error("no checkpoint written")
		}
	})
}

// The witnesses' status (/readyz, the metrics) describes checkpoints that are written: one the
// witnesses cosigned but the full disk kept out of the checkpoints file moves neither, and the
// next checkpoint written does. The file is on a small tmpfs, filled once the next note cannot fit
// in the file's last page (needs root, as the other full-disk tests).
func TestWitnessStatusWaitsForTheCheckpointWritten(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, _ string) {
		dir := testdb.SmallFilesystem(t, 1<<20)
		file := filepath.Join(dir, "checkpoints")
		lw := witnesstest.Start(t)
		ring := ringOf(t, c)
		registerLog(t, lw, ring)
		policy, err := witness.ParsePolicy([]byte("witness lite " + lw.VKey + " " + lw.URL + "\nquorum lite\n"))
		if err != nil {
			t.Fatal(err)
		}
		w := witnessedCheckpointer(t, file, url, ring, policy)
		size := func() int64 {
			info, err := os.Stat(file)
			if err != nil {
				t.Fatal(err)
			}
			return info.Size()
		}
		// Checkpoints until the next note cannot fit in the room left in the file's last page.
		const page = 4096
		before, grew := int64(0), int64(0)
		for range 30 {
			c.mustRun("apikey", "create", "--user", string(testStaff))
			w.c.tick(context.Background())
			grew, before = size()-before, size()
			if room := page - before%page; room < grew-64 {
				break
			}
		}
		signed, final := w.c.WitnessStatus()
		if signed == 0 || signed != final || page-before%page >= grew-64 {
			t.Fatalf("status %d, %d, file %d bytes (last note %d): no checkpoint cosigned near a page's end", signed, final, before, grew)
		}
		fill := testdb.NewFiller(t, dir)
		for !fill.Take(t, 64<<10) {
		}
		c.mustRun("apikey", "create", "--user", string(testStaff))
		w.c.tick(context.Background())
		if !strings.Contains(w.logs.String(), "audit checkpoint not signed") {
			t.Fatalf("the full disk let the checkpoint be written (%d bytes):\n%s", size(), w.logs.String())
		}
		if w.answers["lite"] != "cosigned" {
			t.Fatalf("the witness did not cosign the checkpoint the disk refused: %v", w.answers)
		}
		if s, f := w.c.WitnessStatus(); s != signed || f != final || w.checkpoint != signed || w.final != final {
			t.Errorf("status after a checkpoint not written: %d, %d (metrics %d, %d); want %d, %d", s, f, w.checkpoint, w.final, signed, final)
		}
		fill.Free(t)
		w.c.tick(context.Background())
		if s, f := w.c.WitnessStatus(); s <= signed || f != s {
			t.Errorf("status once the checkpoint is written: %d, %d; want past %d, final\n%s", s, f, signed, w.logs.String())
		}
	})
}

// witnessed is a checkpointer with witnesses, its log, and what it told the metrics.
type witnessed struct {
	c    *checkpointer
	logs *lockedBuffer
	mu   sync.Mutex
	// answers are the witnesses' last answers by name; checkpoint and final the sizes observed.
	answers           map[string]string
	checkpoint, final int64
}

func (w *witnessed) ObserveWitnessAnswer(name, outcome string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.answers[name] = outcome
}

func (w *witnessed) ObserveAuditCheckpoint(size, final int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checkpoint, w.final = size, final
}

// witnessedCheckpointer is serve's signer on the database at url and the file, with the policy.
func witnessedCheckpointer(t *testing.T, file, url string, ring *secrets.Ring, policy *witness.Policy) *witnessed {
	t.Helper()
	w := &witnessed{logs: &lockedBuffer{}, answers: map[string]string{}}
	c, err := newCheckpointer(file, testdb.OpenAsIs(t, url), ring, newLogger(w.logs, 0))
	if err != nil {
		t.Fatal(err)
	}
	c.witnesses = newWitnesses(policy, c.log, w)
	c.witnesses.client.Timeout = 2 * time.Second
	w.c = c
	return w
}

// registerLog tells the witness of the log whose checkpoints the ring's active key signs, and
// returns the log's verifier.
func registerLog(t *testing.T, lw *witnesstest.Litewitness, ring *secrets.Ring) note.Verifier {
	t.Helper()
	pub, err := ring.CheckpointPublicKey(ring.ActiveKeyID())
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := checkpoint.VerifierKey(checkpoint.DefaultOrigin, pub)
	if err != nil {
		t.Fatal(err)
	}
	lw.Ctl(t, "add-log", "-origin", checkpoint.DefaultOrigin)
	lw.Ctl(t, "add-key", "-origin", checkpoint.DefaultOrigin, "-key", vkey)
	v, err := checkpoint.Verifier(checkpoint.DefaultOrigin, pub)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// witnessVKey is a cosignature/v1 verifier key of a new key named name.
func witnessVKey(t *testing.T, name string) string {
	t.Helper()
	_, vkey := witnesstest.Cosigner(t, name)
	return vkey
}

// lastNote is the newest checkpoint note in the file.
func lastNote(t *testing.T, file string) []byte {
	t.Helper()
	read, err := checkpoint.ReadFile(file)
	if err != nil || len(read.Entries) == 0 {
		t.Fatalf("%s: %v", file, err)
	}
	return read.Entries[len(read.Entries)-1].Note
}

// wantWitnessed checks the note's signature under the log's key and whether its cosignatures
// make the policy's quorum.
func wantWitnessed(t *testing.T, policy *witness.Policy, log note.Verifier, msg []byte, final bool) {
	t.Helper()
	v, err := policy.Check(msg, log)
	if err != nil || v.Met != final {
		t.Fatalf("the note: %+v %v; want final %v\n%s", v, err, final, msg)
	}
}

// serve sends its checkpoints to the witnesses BACKOFFICE_AUDIT_WITNESSES names: /readyz and the
// metrics show how far their cosignatures are behind, and the checkpoint it signs as it stops is
// written cosigned.
func TestServeSendsCheckpointsToWitnesses(t *testing.T) {
	lw := witnesstest.Start(t)
	e := newTestEnv(t)
	if _, _, err := e.run("import", e.writeDataset("demo.json", importableDemo(time.Now().UTC()))); err != nil {
		t.Fatal(err)
	}
	vkey, _, err := e.run("audit", "public-key", "--note")
	if err != nil {
		t.Fatal(err)
	}
	lw.Ctl(t, "add-log", "-origin", checkpoint.DefaultOrigin)
	lw.Ctl(t, "add-key", "-origin", checkpoint.DefaultOrigin, "-key", strings.TrimSpace(vkey))
	policyFile, file := filepath.Join(e.dir, "witnesses"), filepath.Join(e.dir, "checkpoints")
	if err := os.WriteFile(policyFile, []byte("witness lite "+lw.VKey+" "+lw.URL+"\nquorum lite\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.vars["BACKOFFICE_AUDIT_WITNESSES"], e.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = policyFile, file
	addr := freeAddr(t)
	_, stderr, stop := background(func(k string) string { return e.vars[k] }, "serve", "--addr", addr)
	ready := waitFor(t, func() string {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	})
	if !strings.Contains(ready, `"auditWitnesses":{"checkpointSize":0,"finalSize":0}`) {
		t.Errorf("readyz: %s", ready)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/audit-events", nil)
	req.Header.Set("Authorization", "Api-Key "+importedStaffKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	metrics, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(metrics.Body)
	metrics.Body.Close()
	if !strings.Contains(string(body), "backoffice_audit_final_checkpoint_size 0") {
		t.Errorf("metrics: no backoffice_audit_final_checkpoint_size")
	}
	if err := stop(); err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr)
	}
	pub, _ := note.NewVerifier(strings.TrimSpace(vkey))
	policy, err := witness.ParsePolicy([]byte("witness lite " + lw.VKey + " " + lw.URL + "\nquorum lite\n"))
	if err != nil {
		t.Fatal(err)
	}
	wantWitnessed(t, policy, pub, lastNote(t, file), true)
	if list := lw.Ctl(t, "list-logs"); !strings.Contains(list, `"size":`) {
		t.Errorf("litewitness's record: %s", list)
	}
}
