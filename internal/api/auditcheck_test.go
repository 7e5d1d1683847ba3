package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"backoffice/internal/api"
	"backoffice/internal/domain"
	"backoffice/internal/trail"
	"backoffice/internal/witness/witnesstest"
)

// tamper changes what the service answers, as an attacker between the auditor and the service
// (or inside it) would.
type tamper struct {
	mu     sync.Mutex
	change func(path string, body []byte) []byte
}

func (tp *tamper) set(f func(path string, body []byte) []byte) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.change = f
}

func (tp *tamper) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		tp.mu.Lock()
		if tp.change != nil {
			body = tp.change(r.URL.Path, bytes.Clone(body))
		}
		tp.mu.Unlock()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

// TestAuditCheckProgram builds docs/examples/auditcheck, the auditor's program that imports
// nothing of ours, and runs it against the service: it accepts the service's proof and tiles,
// and a changed event, leaf, tile or checkpoint each make it fail.
func TestAuditCheckProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := filepath.Join(t.TempDir(), "auditcheck")
	if out, err := exec.Command("go", "build", "-o", bin, "../../docs/examples/auditcheck").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	h, m := newTreeHarness(t, 70000)
	m.sign(t)
	m.add(t, 300, principalB.String()) // the newest checkpoint is larger than the proof's
	h.handler = api.New(h.deps)
	tp := &tamper{}
	srv := httptest.NewServer(tp.wrap(h.handler))
	t.Cleanup(srv.Close)

	index := 69950 // in the partial level 0 tile of the proof's tree, in the full one of the newest
	r := h.get("/v1/audit-events/"+m.events[index].ID.String()+"/proof", staffKey)
	if r.Status != http.StatusOK {
		t.Fatalf("proof: %d %s", r.Status, r.Body)
	}
	m.sign(t)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("event.json", r.Body)
	run := func(file string, online bool) (string, error) {
		args := []string{"-key", m.verifierKey, "-proof", file}
		if online {
			args = append(args, "-url", srv.URL, "-credential", "Api-Key "+staffKey)
		}
		out, err := exec.Command(bin, args...).CombinedOutput()
		return string(out), err
	}
	for _, online := range []bool{false, true} {
		if out, err := run(good, online); err != nil || !strings.HasPrefix(out, "ok: event ") {
			t.Fatalf("the service's proof (online %v): %v\n%s", online, err, out)
		}
	}
	var p eventProof
	r.decode(t, &p)
	changedFile := func(name string, change func(*eventProof)) string {
		c := p
		change(&c)
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		return write(name, b)
	}
	files := map[string]string{
		"a changed event": changedFile("event-changed.json", func(c *eventProof) { c.Event.Outcome = "denied" }),
		"a changed leaf (its tag)": changedFile("tag-changed.json", func(c *eventProof) {
			head, rest, _ := strings.Cut(c.Proof, "\nextra ")
			tag, rest, _ := strings.Cut(rest, "\n")
			b, err := base64.StdEncoding.DecodeString(tag)
			if err != nil {
				t.Fatal(err)
			}
			b[0] ^= 1
			c.Proof = head + "\nextra " + base64.StdEncoding.EncodeToString(b) + "\n" + rest
		}),
		"a changed checkpoint": changedFile("checkpoint-changed.json", func(c *eventProof) {
			c.Proof = strings.Replace(c.Proof, "\n70000\n", "\n70001\n", 1)
		}),
	}
	for what, file := range files {
		if out, err := run(file, false); err == nil || !strings.HasPrefix(out, "FAILED: ") {
			t.Errorf("%s passes: %s", what, out)
		}
	}
	served := map[string]func(path string, body []byte) []byte{
		"a changed hash tile": func(path string, b []byte) []byte {
			if strings.HasPrefix(path, "/v1/audit-log/tile/0/") && len(b) > 0 {
				b[len(b)-1] ^= 1
			}
			return b
		},
		"a changed entry": func(path string, b []byte) []byte {
			if strings.HasPrefix(path, "/v1/audit-log/tile/entries/") && len(b) > 0 {
				b[len(b)-1] ^= 1
			}
			return b
		},
		"a changed newest checkpoint": func(path string, b []byte) []byte {
			if path == "/v1/audit-log/checkpoint" {
				b = bytes.Replace(b, []byte("\n70300\n"), []byte("\n70299\n"), 1)
			}
			return b
		},
	}
	for what, change := range served {
		tp.set(change)
		if out, err := run(good, true); err == nil || !strings.HasPrefix(out, "FAILED: ") {
			t.Errorf("%s passes: %s", what, out)
		}
	}
	tp.set(nil)
	if out, err := run(good, true); err != nil {
		t.Fatalf("the service's proof again: %v\n%s", err, out)
	}
}

// With -policy, the program accepts a checkpoint only with the policy's quorum of cosignatures
// (read by transparency-dev's formats) and names the witnesses that cosigned; a policy whose
// quorum needs no cosignature is refused.
func TestAuditCheckProgramWitnessPolicy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := filepath.Join(t.TempDir(), "auditcheck")
	if out, err := exec.Command("go", "build", "-o", bin, "../../docs/examples/auditcheck").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cosigner, cosigVKey := witnesstest.Cosigner(t, "witness.test/w1")
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	policy := write("policy", "witness w1 "+cosigVKey+" https://w1.example\nquorum w1\n")
	h, m := newTreeHarness(t, 100)
	proofOf := func(name string) string {
		m.sign(t)
		r := h.get("/v1/audit-events/"+m.events[40].ID.String()+"/proof", staffKey)
		if r.Status != http.StatusOK {
			t.Fatalf("proof: %d %s", r.Status, r.Body)
		}
		return write(name, string(r.Body))
	}
	run := func(policy, proof string) (string, error) {
		out, err := exec.Command(bin, "-key", m.verifierKey, "-proof", proof, "-policy", policy).CombinedOutput()
		return string(out), err
	}
	alone := proofOf("alone.json")
	m.cosigners = []note.Signer{cosigner}
	m.add(t, 1, principalA.String())
	cosigned := proofOf("cosigned.json")
	if out, err := run(policy, cosigned); err != nil || !strings.Contains(out, "witnessed: the checkpoint is cosigned by witness.test/w1: the policy's quorum") || !strings.Contains(out, "ok: event ") {
		t.Errorf("a cosigned checkpoint: %v\n%s", err, out)
	}
	if out, err := run(policy, alone); err == nil || !strings.Contains(out, "short of its quorum") {
		t.Errorf("a checkpoint no witness cosigned: %v\n%s", err, out)
	}
	if out, err := run(write("zero", "witness w1 "+cosigVKey+" https://w1.example\ngroup nobody 0 w1\nquorum nobody\n"), alone); err == nil || !strings.Contains(out, "needs no cosignature") {
		t.Errorf("a quorum of no cosignature: %v\n%s", err, out)
	}
}

// subjectTagger tags as the memLog does, under its one key.
type subjectTagger struct{}

func (subjectTagger) SubjectTag(keyID, subject string) ([]byte, error) {
	if keyID != "k1" {
		return nil, errors.New("unknown key")
	}
	return subjectTag(subject), nil
}

// The auditor's program checks one subject's complete history (-complete) in a tree of many
// bundles: its events in the first bundle, a full one in the middle and the partial last one are
// found from the entry bundles, and the file accepted; the last one left out is named.
func TestAuditCheckProgramCompleteHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := filepath.Join(t.TempDir(), "auditcheck")
	if out, err := exec.Command("go", "build", "-o", bin, "../../docs/examples/auditcheck").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	h, m := newTreeHarness(t, 100)
	subject := domain.NewID().String()
	for _, n := range []int{40000, 29890} {
		m.add(t, 1, subject)
		m.add(t, n, principalA.String(), principalB.String())
	}
	m.add(t, 1, subject) // in the partial last tile: 69993 = 273*256 + 105
	note := m.sign(t)
	srv := httptest.NewServer(h.handler)
	t.Cleanup(srv.Close)
	var events []domain.AuditEvent
	for _, e := range m.events {
		if e.TargetID == subject {
			e.Hash = "00" // linked, as the store lists it: its leaf has a tag
			events = append(events, e)
		}
	}
	hist, err := trail.ProveHistory(context.Background(), m, subjectTagger{}, []string{"k1"}, subject, events, note)
	if err != nil {
		t.Fatal(err)
	}
	run := func(hist trail.History) (string, error) {
		b, err := json.Marshal(hist)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "history.json")
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "-key", m.verifierKey, "-proof", file, "-complete", "-url", srv.URL, "-credential", "Api-Key "+staffKey).CombinedOutput()
		return string(out), err
	}
	if out, err := run(hist); err != nil || !strings.Contains(out, "ok: complete: the 3 events about "+subject+" are every leaf of the tree of 69993") {
		t.Fatalf("the subject's history: %v\n%s", err, out)
	}
	hist.Proofs = hist.Proofs[:2]
	if out, err := run(hist); err == nil || !strings.Contains(out, "FAILED: not the subject's complete history: missing from the file, carrying the subject's tag: leaf 69992 (seq 69993)") {
		t.Fatalf("the last event left out: %v\n%s", err, out)
	}
}
