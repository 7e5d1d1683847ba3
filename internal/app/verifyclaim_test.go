package app

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"backoffice/internal/checkpoint"
)

// wantLines fails the test unless out holds every line of want.
func wantLines(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, "\n"+w+"\n") && !strings.HasPrefix(out, w+"\n") {
			t.Errorf("the answer lacks the line %q:\n%s", w, out)
		}
	}
}

// An auditor who holds only the old key's public key after a rotation cannot check the
// checkpoints signed under the new key: verify says so (cannot check), naming the seqs the old
// key's checkpoints prove and those they do not, whether the export is whole, altered where only
// a new checkpoint covers it, or cut there. --limit-to-keys limits the claim to what the keys
// given prove, and says exactly which seqs that is.
func TestOfflineVerifyWithTheOldKeyAlone(t *testing.T) {
	c, url := auditCLI(t, "sqlite") // seq 1-3 under k1
	file := filepath.Join(t.TempDir(), "checkpoints.jsonl")
	export := filepath.Join(t.TempDir(), "export.json")
	signCheckpoint(t, c, file) // seq 3, under k1
	oldKey := strings.TrimSpace(c.mustRun("audit", "public-key"))
	c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2", "k1")
	newKey := strings.TrimSpace(c.mustRun("audit", "public-key"))
	for range 2 {
		c.mustRun("apikey", "create", "--user", string(testStaff))
	}
	signCheckpoint(t, c, file) // seq 5, under k2
	c.mustRun("apikey", "create", "--user", string(testStaff))
	signCheckpoint(t, c, file) // seq 6, under k2
	replica := filepath.Join(t.TempDir(), "replica.jsonl")
	signCheckpoint(t, c, replica) // a replica started after the rotation: seq 6, under k2 alone
	auditor := &cli{t: t, vars: map[string]string{}}
	old := []string{"--export", export, "--checkpoints", file, "--public-key", oldKey}
	both := append(old[:len(old):len(old)], "--public-key", newKey)
	limited := append(old[:len(old):len(old)], "--limit-to-keys")

	c.mustRun("export", export)
	wantVerify(t, auditor, nil, "intact: 6 events", both...)
	out := wantVerify(t, auditor, ErrCannotCheck, "CANNOT CHECK: checkpoints signed under a key not given (k2) were not checked: "+file+" lines 10-19 (seq 5-6)", old...)
	wantLines(t, out, "proved: seq 1-3, by the digests of the checkpoints checked (links not checked: no master key)", "not proved: seq 4-6")
	out = wantVerify(t, auditor, nil, "intact up to seq 3, as far as the keys given prove (--limit-to-keys): seq 4-6 not proved", limited...)
	wantLines(t, out, "not proved: seq 4-6")
	if strings.Contains(out, "hash:") {
		t.Errorf("a limited claim prints the head of events it did not prove:\n%s", out)
	}
	// A file none of whose checkpoints is under a key given: cannot check it, unless the claim
	// is limited; then its checkpoints are among those not checked.
	wantVerify(t, auditor, ErrCannotCheck, "is signed under a key given", append(old[:len(old):len(old)], "--checkpoints", replica)...)
	out = wantVerify(t, auditor, nil, "intact up to seq 3, as far as the keys given prove (--limit-to-keys): seq 4-6 not proved", append(limited[:len(limited):len(limited)], "--checkpoints", replica)...)
	wantLines(t, out, "not proved: seq 4-6")

	// Altered where only a checkpoint under the new key covers it.
	sqlOn(t, url, `UPDATE audit_events SET detail = 'nothing to see' WHERE seq = 5`)
	c.mustRun("export", export)
	wantVerify(t, auditor, errAuditChainBroken, "an event in seq 4-5 differs from what the checkpoint of", both...)
	out = wantVerify(t, auditor, ErrCannotCheck, "signed under a key not given (k2)", old...)
	wantLines(t, out, "proved: seq 1-3, by the digests of the checkpoints checked (links not checked: no master key)", "not proved: seq 4-6")
	wantVerify(t, auditor, nil, "intact up to seq 3, as far as the keys given prove (--limit-to-keys): seq 4-6 not proved", limited...)

	// Cut after seq 4.
	sqlOn(t, url, `DELETE FROM audit_events WHERE seq >= 5`)
	c.mustRun("export", export)
	wantVerify(t, auditor, errAuditChainBroken, "covers it up to seq 6: its tail was cut off", both...)
	out = wantVerify(t, auditor, ErrCannotCheck, "signed under a key not given (k2)", old...)
	wantLines(t, out, "not proved: seq 4-6 (the trail given ends at seq 4)")
	wantVerify(t, auditor, nil, "intact up to seq 3, as far as the keys given prove (--limit-to-keys): seq 4-6 not proved", limited...)
}

// An export whose newest events no checkpoint covers yet: without the master key nothing proves
// them, so verify cannot say the export is intact; --limit-to-keys claims the rest.
func TestOfflineVerifyOfEventsNoCheckpointCovers(t *testing.T) {
	c, url, a := offlineAudit(t) // a checkpoint of seq 3
	c.mustRun("apikey", "create", "--user", string(testStaff))
	c.mustRun("export", a.export)
	const first = "CANNOT CHECK: seq 4 of the export is covered by no checkpoint checked, and without the master key nothing else proves it"
	out := wantVerify(t, a.auditor, ErrCannotCheck, first, a.args...)
	wantLines(t, out, "proved: seq 1-3, by the digests of the checkpoints checked (links not checked: no master key)", "not proved: seq 4")
	wantVerify(t, a.auditor, nil, "intact up to seq 3, as far as the keys given prove (--limit-to-keys): seq 4 not proved", append(a.args, "--limit-to-keys")...)
	signCheckpoint(t, c, a.file)
	wantVerify(t, a.auditor, nil, "intact: 4 events", a.args...)

	// An event altered where no checkpoint covers it yet is not called intact either.
	c.mustRun("apikey", "create", "--user", string(testStaff))
	c.mustRun("export", a.export)
	exported := readFile(t, a.export)
	sqlOn(t, url, `UPDATE audit_events SET detail = 'nothing to see' WHERE seq = 5`)
	c.mustRun("export", a.export)
	if readFile(t, a.export) == exported {
		t.Fatal("the change did not reach the export")
	}
	wantVerify(t, a.auditor, ErrCannotCheck, "CANNOT CHECK: seq 5 of the export is covered by no checkpoint checked", a.args...)
}

// forgeCheckpoint appends to file a line claiming seq, under a key id nobody holds, that names
// the file's last checkpoint.
func forgeCheckpoint(t *testing.T, file string, seq int64) {
	t.Helper()
	last := fileCheckpoints(t, file)
	prev := last[len(last)-1]
	line, _ := json.Marshal(checkpoint.Checkpoint{V: 1, Seq: seq, Digest: strings.Repeat("00", 32), Prev: prev.ID(),
		At: prev.At, KeyID: "kX", Sig: base64.StdEncoding.EncodeToString(make([]byte, 64))})
	if err := os.WriteFile(file, []byte(readFile(t, file)+string(line)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A checkpoint line under a key id nobody holds, claiming a seq past the trail's head, is not
// checked, so verify does not say intact, with the ring or offline: it names the line and the
// seqs it claims and nothing proves.
func TestVerifyWithAForgedCheckpointLine(t *testing.T) {
	c, _, a := offlineAudit(t) // seq 1-3, a checkpoint of seq 3
	c.mustRun("export", a.export)
	forgeCheckpoint(t, a.file, 50)
	const first = "CANNOT CHECK: checkpoints signed under a key not given (kX) were not checked: "
	out := wantVerify(t, c, ErrCannotCheck, first+a.file+" line 10 (seq 50)", "--checkpoints", a.file)
	wantLines(t, out, "proved: seq 1-3, by the links and anchors the ring checks, and the checkpoints checked", "not proved: seq 4-50, which checkpoints not checked claim the trail held")
	out = wantVerify(t, c, nil, "intact up to seq 3, as far as the keys given prove (--limit-to-keys): seq 4-50 not proved", "--checkpoints", a.file, "--limit-to-keys")
	wantLines(t, out, "not proved: seq 4-50, which checkpoints not checked claim the trail held")
	c.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = a.file
	wantVerify(t, c, ErrCannotCheck, first+a.file+" line 10 (seq 50)")
	delete(c.vars, "BACKOFFICE_AUDIT_CHECKPOINTS")

	out = wantVerify(t, a.auditor, ErrCannotCheck, first+a.file+" line 10 (seq 50)", a.args...)
	wantLines(t, out, "proved: seq 1-3, by the digests of the checkpoints checked (links not checked: no master key)", "not proved: seq 4-50, which checkpoints not checked claim the trail held")

	// A torn last line, as a full disk leaves it, stays a note.
	torn := filepath.Join(t.TempDir(), "torn.jsonl")
	signCheckpoint(t, c, torn)
	if err := os.WriteFile(torn, []byte(readFile(t, torn)+`{"v":1,"seq":9,"head":"`), 0o600); err != nil {
		t.Fatal(err)
	}
	wantVerify(t, c, nil, torn+" line 10 is torn", "--checkpoints", torn)
}

// With the ring, after a rotation whose old key left the ring before serve signed under the new
// one: the links are proved (the anchor covers the old ones), the file's only checkpoint, under
// the old key, is not checked; verify says so rather than intact, and --limit-to-keys claims the
// events, naming the checkpoint it did not check.
func TestVerifyWithTheRingWhenTheCheckpointsAreUnderAKeyItLacks(t *testing.T) {
	c, _ := auditCLI(t, "sqlite") // seq 1-3 under k1
	file := filepath.Join(t.TempDir(), "checkpoints.jsonl")
	signCheckpoint(t, c, file) // seq 3, under k1
	c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2", "k1")
	c.mustRun("keys", "rewrap") // seq 4-6, the anchor of seq 1-3 under k2
	c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2")
	wantVerify(t, c, ErrCannotCheck, "is signed under a key given (they name key k1)", "--checkpoints", file)
	out := wantVerify(t, c, nil, "intact up to seq 6, as far as the keys given prove (--limit-to-keys): the checkpoints not checked are not proved", "--checkpoints", file, "--limit-to-keys")
	wantLines(t, out, "proved: seq 1-6, by the links and anchors the ring checks, and the checkpoints checked",
		"not proved: that the trail is what the checkpoints not checked signed (seq 3)")
}

// cutAtStart writes, beside file, the file without its first checkpoint: the lines from where
// its second starts.
func cutAtStart(t *testing.T, file string) string {
	t.Helper()
	read, err := checkpoint.ReadFile(file)
	if err != nil || len(read.Entries) < 2 {
		t.Fatalf("want two checkpoints or more in %s: %v", file, err)
	}
	lines := strings.SplitAfter(readFile(t, file), "\n")
	cut := file + ".cut"
	if err := os.WriteFile(cut, []byte(strings.Join(lines[read.Entries[1].Line-1:], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	return cut
}

// A checkpoints file whose first checkpoint names one before it that the file lacks starts
// mid-way (cut, or kept by a store that holds less history): verify checks every checkpoint given
// and says, in a note, that those before them were not given.
func TestVerifyNotesAFileThatStartsMidway(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		signCheckpoint(t, c, file)
		c.mustRun("apikey", "create", "--user", string(testStaff))
		signCheckpoint(t, c, file)
		out := wantVerify(t, c, nil, "checkpoints: 2 matched", "--checkpoints", file)
		const says = "the file starts mid-way"
		if strings.Contains(out, says) {
			t.Fatalf("the whole file said to start mid-way:\n%s", out)
		}
		cut := cutAtStart(t, file)
		wantVerify(t, c, nil, says, "--checkpoints", cut)
		wantVerify(t, c, nil, "checkpoints: 1 matched", "--checkpoints", cut)
	})
}
