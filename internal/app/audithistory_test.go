package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"backoffice/internal/domain"
	"backoffice/internal/testdb"
	"backoffice/internal/trail"
)

// buildAuditCheck builds the auditor's program, docs/examples/auditcheck.
func buildAuditCheck(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := filepath.Join(t.TempDir(), "auditcheck")
	if out, err := exec.Command("go", "build", "-o", bin, "../../docs/examples/auditcheck").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// historyChecker runs the auditor's program with -complete against a service serving the
// database c uses, under the checkpoints of file.
type historyChecker struct {
	t         *testing.T
	bin, vkey string
	url, key  string
}

func newHistoryChecker(t *testing.T, bin string, c *cli, url, file string) *historyChecker {
	t.Helper()
	key := strings.TrimSpace(c.mustRun("apikey", "create", "--user", string(testStaff)))
	signCheckpoint(t, c, file) // the service's newest checkpoint is past the histories'
	st := testdb.OpenAsIs(t, url)
	ring := ringOf(t, c)
	var logs lockedBuffer
	chk, err := newCheckpointer(file, st, ring, newLogger(&logs, 0))
	if err != nil {
		t.Fatal(err)
	}
	h, _ := newServing(Config{}, st, ring, newLogger(&logs, 0), nil, nil, nil, chk)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &historyChecker{t: t, bin: bin, vkey: strings.TrimSpace(c.mustRun("audit", "public-key", "--note")), url: srv.URL, key: key}
}

// run checks the history h, reading the tiles from the service, or from dir if given.
func (hc *historyChecker) run(h trail.History, args ...string) (string, error) {
	hc.t.Helper()
	b, err := json.Marshal(h)
	if err != nil {
		hc.t.Fatal(err)
	}
	file := filepath.Join(hc.t.TempDir(), "history.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		hc.t.Fatal(err)
	}
	args = append([]string{"-key", hc.vkey, "-proof", file, "-complete"}, args...)
	if !strings.Contains(strings.Join(args, " "), "-tiles") {
		args = append(args, "-url", hc.url, "-credential", "Api-Key "+hc.key)
	}
	out, err := exec.Command(hc.bin, args...).CombinedOutput()
	return string(out), err
}

// wantFailed wants the program to have failed (exit 1) saying want.
func (hc *historyChecker) wantFailed(what string, out string, err error, want string) {
	hc.t.Helper()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, "FAILED: ") || !strings.Contains(out, want) {
		hc.t.Errorf("%s: %v, want exit 1 and %q:\n%s", what, err, want, out)
	}
}

// proveHistory runs audit prove --target-id.
func proveHistory(t *testing.T, c *cli, target string) trail.History {
	t.Helper()
	var h trail.History
	if err := json.Unmarshal([]byte(c.mustRun("audit", "prove", "--target-id", target)), &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// proofIndex is the leaf index of a history's proof.
func proofIndex(p trail.EventProof) int64 { return trail.Index(p.Event.Seq) }

// One subject's complete history, its events linked under two keys (a key rotation between
// them): audit prove --target-id names its tag under each key of the ring and proves each event,
// and the auditor's program, reading every entry bundle from the service (or from the tiles it
// saved), accepts it, as it accepts the empty history of an object no event is about; an event
// left out of the file, one of another subject's put in, one proved against another checkpoint,
// one twice, a tag held back or not a tag, and a changed entry each fail it, naming the leaf.
func TestAuditCheckCompleteHistory(t *testing.T) {
	bin := buildAuditCheck(t)
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		// auditCLI's trail: two keys created, the first of them revoked, all under k1.
		var events []domain.AuditEvent
		for _, line := range strings.Split(strings.TrimSpace(c.mustRun("audit", "list", "--format", "json")), "\n") {
			var e domain.AuditEvent
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatal(err)
			}
			events = append(events, e)
		}
		revoked := events[0].TargetID
		subject := events[1].TargetID
		if subject == revoked {
			subject = events[2].TargetID
		}
		c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2", "k1")
		c.mustRun("apikey", "revoke", subject) // under k2 now
		c.mustRun("apikey", "create", "--user", string(testStaff))
		signCheckpoint(t, c, file)
		c.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = file

		h := proveHistory(t, c, subject)
		ring := ringOf(t, c)
		if len(h.Tags) != 2 || h.Tags[0].KeyID != "k1" || h.Tags[1].KeyID != "k2" || h.TargetID != subject {
			t.Fatalf("the subject's tags, by key: %+v", h.Tags)
		}
		for _, tag := range h.Tags {
			if want, err := ring.SubjectTag(tag.KeyID, subject); err != nil || !bytes.Equal(tag.Tag, want) {
				t.Fatalf("tag under %s: %x, want %x (%v)", tag.KeyID, tag.Tag, want, err)
			}
		}
		if len(h.Proofs) != 2 || h.Proofs[0].Event.ChainKeyID != "k1" || h.Proofs[1].Event.ChainKeyID != "k2" || h.Proofs[1].Event.Action != actionAPIKeyRevoke {
			t.Fatalf("the subject's creation under k1 and revocation under k2: %+v", h.Proofs)
		}
		if !strings.HasSuffix(h.Proofs[0].Proof, "\n\n"+h.Checkpoint) {
			t.Fatalf("the proofs are not against the history's checkpoint:\n%s", h.Proofs[0].Proof)
		}

		other := proveHistory(t, c, revoked)
		keys := c.vars["BACKOFFICE_MASTER_KEYS"]
		delete(c.vars, "BACKOFFICE_MASTER_KEYS")
		if _, _, err := c.run("audit", "prove", "--target-id", subject); err == nil || !strings.Contains(err.Error(), "the subject's tags are made under the master keys") {
			t.Fatalf("a history without the ring: %v", err)
		}
		c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2")
		if _, _, err := c.run("audit", "prove", "--target-id", subject); err == nil || !strings.Contains(err.Error(), `the subject's tag under key "k1"`) {
			t.Fatalf("a history with an event under a key the ring no longer holds: %v", err)
		}
		c.vars["BACKOFFICE_MASTER_KEYS"] = keys
		hc := newHistoryChecker(t, bin, c, url, file)
		tiles := t.TempDir()
		for _, args := range [][]string{{"-save", tiles}, {"-tiles", tiles}} {
			out, err := hc.run(h, args...)
			if err != nil || !strings.Contains(out, fmt.Sprintf("ok: complete: the 2 events about %s", subject)) {
				t.Fatalf("the complete history (%v): %v\n%s", args, err, out)
			}
		}

		// An object no event is about has a history too: none, which the tiles confirm.
		none := proveHistory(t, c, string(domain.NewID()))
		if len(none.Tags) != 2 || len(none.Proofs) != 0 {
			t.Fatalf("the history of an object no event is about: %+v", none)
		}
		if out, err := hc.run(none); err != nil || !strings.Contains(out, "ok: complete: the 0 events about "+none.TargetID) {
			t.Fatalf("an empty history: %v\n%s", err, out)
		}

		left := h
		left.Proofs = h.Proofs[1:]
		out, err := hc.run(left)
		hc.wantFailed("an event left out", out, err, fmt.Sprintf("missing from the file, carrying the subject's tag: leaf %d (seq %d)", proofIndex(h.Proofs[0]), h.Proofs[0].Event.Seq))

		mixed := h
		mixed.Proofs = append([]trail.EventProof{other.Proofs[0]}, h.Proofs...)
		out, err = hc.run(mixed)
		hc.wantFailed("another subject's event", out, err, fmt.Sprintf("leaf %d: the event is about %s", proofIndex(other.Proofs[0]), revoked))

		later := h // the subject's first event proved against the newer checkpoint
		later.Proofs = append([]trail.EventProof{proveHistory(t, c, subject).Proofs[0]}, h.Proofs[1:]...)
		out, err = hc.run(later)
		hc.wantFailed("a proof against another checkpoint", out, err, fmt.Sprintf("leaf %d: proved against another checkpoint than the history's", proofIndex(h.Proofs[0])))

		held := h
		held.Tags = h.Tags[1:]
		out, err = hc.run(held)
		hc.wantFailed("a tag held back", out, err, fmt.Sprintf(`leaf %d: its subject tag is not the subject's under key "k1"`, proofIndex(h.Proofs[0])))

		twice := h
		twice.Proofs = append(h.Proofs[:1:1], h.Proofs...)
		out, err = hc.run(twice)
		hc.wantFailed("an event twice", out, err, fmt.Sprintf("leaf %d is in the file twice", proofIndex(h.Proofs[0])))
		for what, tags := range map[string][]trail.SubjectTag{
			"no tag":           nil,
			"a zero tag":       {h.Tags[0], {KeyID: "k2", Tag: make([]byte, 32)}},
			"a short tag":      {h.Tags[0], {KeyID: "k2", Tag: h.Tags[1].Tag[:31]}},
			"a key's two tags": {h.Tags[0], h.Tags[1], {KeyID: "k2", Tag: h.Tags[0].Tag}},
		} {
			bad := h
			bad.Tags = tags
			out, err = hc.run(bad)
			hc.wantFailed(what, out, err, map[bool]string{true: "is not a subject's history", false: "k2"}[tags == nil])
		}

		// A leaf of the saved tiles changed: the bundle no longer matches its level 0 tile.
		bundles, err := filepath.Glob(filepath.Join(tiles, "tile", "entries", "*", "*"))
		if err != nil || len(bundles) != 1 {
			t.Fatalf("the saved entry bundles: %v %v", bundles, err)
		}
		b, err := os.ReadFile(bundles[0])
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-1] ^= 1
		if err := os.WriteFile(bundles[0], b, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err = hc.run(h, "-tiles", tiles)
		hc.wantFailed("a changed entry", out, err, "entry bundle: entry ")

		if out, err := exec.Command(bin, "-key", hc.vkey, "-proof", filepath.Join(tiles, "checkpoint"), "-complete").CombinedOutput(); err == nil || !strings.Contains(err.Error(), "exit status 2") {
			t.Errorf("-complete without -url or -tiles: %v\n%s", err, out)
		}
	})
}

// Leaves from before the chain carry no tag: whose they are cannot be told, so no history in
// such a tree is called complete; and an event of them in a history is named.
func TestAuditCheckCompleteHistoryRefusesUntaggedLeaves(t *testing.T) {
	bin := buildAuditCheck(t)
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			url := testdb.URL(t, engine)
			testdb.OpenAsIs(t, url)
			sqlOn(t, url, fmt.Sprintf(`INSERT INTO audit_events (id, at, actor_user_id, action, target_id, outcome, detail, seq)
				VALUES ('%s', 1700000000000001, '%s', 'principal.decrypt', '%s', 'granted', 'field ssn', 1)`, testdb.FixtureID(9801), testStaff, testPrincipal(1)),
				`UPDATE audit_chain_genesis SET last_unlinked_seq = 1`)
			c := newCLI(t, url, "k1")
			c.importFile(testDataset(0))
			c.mustRun("apikey", "create", "--user", string(testStaff))
			file := filepath.Join(t.TempDir(), "checkpoints.jsonl")
			signCheckpoint(t, c, file)
			c.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = file
			var created domain.AuditEvent
			if err := json.Unmarshal([]byte(c.mustRun("audit", "list", "--format", "json", "--limit", "1")), &created); err != nil {
				t.Fatal(err)
			}
			keyed := proveHistory(t, c, created.TargetID)
			legacy := proveHistory(t, c, string(testPrincipal(1)))
			if len(legacy.Proofs) != 1 || legacy.Proofs[0].Event.Seq != 1 {
				t.Fatalf("the principal's event from before the chain: %+v", legacy.Proofs)
			}
			hc := newHistoryChecker(t, bin, c, url, file)
			out, err := hc.run(keyed)
			hc.wantFailed("a tree with an untagged leaf", out, err, "cannot check: 1 leaves of the tree (the first: leaf 0) have no subject tag")
			out, err = hc.run(legacy)
			hc.wantFailed("an untagged event", out, err, "leaf 0: the event has no key")
		})
	}
}
