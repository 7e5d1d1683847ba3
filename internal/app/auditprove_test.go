package app

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tlogproof "github.com/transparency-dev/formats/proof"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"backoffice/internal/checkpoint"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
	"backoffice/internal/trail"
)

// signTree signs a checkpoint of the store's tree as it is now, into a file.
func signTree(t *testing.T, url string) (file string, verifier note.Verifier) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	size, err := st.AuditTreeSize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	root, err := tlog.TreeHash(size, st.AuditHashReader(ctx))
	if err != nil {
		t.Fatal(err)
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, "backoffice.test/audit")
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := note.NewSigner(skey)
	verifier, _ = note.NewVerifier(vkey)
	msg, err := note.Sign(&note.Note{Text: fmt.Sprintf("backoffice.test/audit\n%d\n%s\n", size, base64.StdEncoding.EncodeToString(root[:]))}, signer)
	if err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(t.TempDir(), "checkpoint.txt")
	if err := os.WriteFile(file, msg, 0o600); err != nil {
		t.Fatal(err)
	}
	return file, verifier
}

// checkEventProof checks a proof as an auditor does: the signature, the leaf from the event and
// its tag, the inclusion.
func checkEventProof(t *testing.T, p trail.EventProof, verifier note.Verifier) {
	t.Helper()
	var tp tlogproof.TLogProof
	if err := tp.Unmarshal([]byte(p.Proof)); err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(tp.Checkpoint, note.VerifierList(verifier))
	if err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	cp, err := trail.CheckpointOf(tp.Checkpoint)
	if err != nil || !strings.HasPrefix(n.Text, cp.Origin+"\n") {
		t.Fatalf("checkpoint body: %v", err)
	}
	hashes := make(tlog.RecordProof, len(tp.Hashes))
	for i, h := range tp.Hashes {
		hashes[i] = h
	}
	leaf := trail.Leaf(tp.ExtraData, p.Event)
	if int64(tp.Index) != p.Event.Seq-1 || tlog.CheckRecord(hashes, int64(cp.Size), tlog.Hash(cp.Hash), int64(tp.Index), tlog.RecordHash(leaf)) != nil {
		t.Fatalf("event %s (seq %d) does not check at index %d", p.Event.ID, p.Event.Seq, tp.Index)
	}
}

func TestAuditProveCommand(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			c, url := auditCLI(t, engine)
			cp, verifier := signTree(t, url)
			var events []domain.AuditEvent
			for _, line := range strings.Split(strings.TrimSpace(c.mustRun("audit", "list", "--format", "json")), "\n") {
				var e domain.AuditEvent
				if err := json.Unmarshal([]byte(line), &e); err != nil {
					t.Fatal(err)
				}
				events = append(events, e)
			}
			revoked := events[0] // newest first: the revocation of the dataset's key
			var one trail.EventProof
			if err := json.Unmarshal([]byte(c.mustRun("audit", "prove", "--checkpoint", cp, string(events[1].ID))), &one); err != nil {
				t.Fatal(err)
			}
			if one.Event.ID != events[1].ID {
				t.Fatalf("proof of %s", one.Event.ID)
			}
			checkEventProof(t, one, verifier)

			out := filepath.Join(t.TempDir(), "subject.json")
			c.mustRun("audit", "prove", "--checkpoint", cp, "--target-id", revoked.TargetID, "--out", out)
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var file struct{ Proofs []trail.EventProof }
			if err := json.Unmarshal(b, &file); err != nil {
				t.Fatal(err)
			}
			if len(file.Proofs) != 1 || file.Proofs[0].Event.ID != revoked.ID {
				t.Fatalf("the revoked key's one event: %+v", file.Proofs)
			}
			checkEventProof(t, file.Proofs[0], verifier)

			// A newer event of the subject than the checkpoint: no file that leaves it out.
			created := events[1] // a key the command created: revoked now, its subject has two events
			c.mustRun("apikey", "revoke", created.TargetID)
			if _, _, err := c.run("audit", "prove", "--checkpoint", cp, "--target-id", created.TargetID); err == nil || !strings.Contains(err.Error(), "no signed checkpoint covers") {
				t.Fatalf("a subject with an event past the checkpoint: %v", err)
			}
			cp, verifier = signTree(t, url)
			c.mustRun("audit", "prove", "--checkpoint", cp, "--target-id", created.TargetID, "--out", out)
			if b, err = os.ReadFile(out); err != nil {
				t.Fatal(err)
			}
			file.Proofs = nil
			if err := json.Unmarshal(b, &file); err != nil {
				t.Fatal(err)
			}
			if len(file.Proofs) != 2 || file.Proofs[0].Event.ID != created.ID || file.Proofs[1].Event.Action != actionAPIKeyRevoke {
				t.Fatalf("the key's creation and revocation, oldest first: %+v", file.Proofs)
			}
			for _, p := range file.Proofs {
				checkEventProof(t, p, verifier)
			}
			for _, args := range [][]string{
				{"audit", "prove", "--checkpoint", cp},
				{"audit", "prove", "--checkpoint", cp, "--target-id", revoked.TargetID, string(events[1].ID)},
				{"audit", "prove", "--checkpoint", cp, "not-a-uuid"},
				{"audit", "prove", string(events[1].ID)},
				{"audit", "prove", "--checkpoint", out, string(events[1].ID)}, // not a checkpoint
				{"audit", "prove", "--checkpoint", cp, "--target-id", "x"},
			} {
				if _, _, err := c.run(args...); !errors.Is(err, ErrUsage) {
					t.Errorf("%v: %v, want a usage error", args, err)
				}
			}
			if _, _, err := c.run("audit", "prove", "--checkpoint", cp, string(domain.NewID())); err == nil || errors.Is(err, ErrUsage) {
				t.Errorf("an unknown event: %v", err)
			}
		})
	}
}

// Without --checkpoint, the proof is against the newest note of the checkpoints file serve
// appends to; a file without one is refused, as is no checkpoint at all.
func TestAuditProveFromTheCheckpointsFile(t *testing.T) {
	c, url := auditCLI(t, "sqlite")
	file := filepath.Join(t.TempDir(), "checkpoints")
	c.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = file
	id := strings.Fields(strings.Split(c.mustRun("audit", "list", "--limit", "1"), "\n")[1])
	if _, _, err := c.run("audit", "prove", "--target-id", id[len(id)-1]); err == nil {
		t.Fatal("no checkpoints file: a proof")
	}
	ctx := context.Background()
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	size, err := st.AuditTreeSize(ctx)
	root, err2 := tlog.TreeHash(size, st.AuditHashReader(ctx))
	st.Close()
	if err != nil || err2 != nil {
		t.Fatal(err, err2)
	}
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	const origin = "backoffice.test/audit"
	signed, _, err := checkpoint.Append(file, map[string]ed25519.PublicKey{"k1": pub}, nil, func(*checkpoint.Checkpoint) (checkpoint.Checkpoint, error) {
		return checkpoint.Sign(checkpoint.Head{Size: size, Root: root, Digest: make([]byte, 32)}, origin, "", time.Now(), "k1", key)
	})
	if err != nil {
		t.Fatal(err)
	}
	var events []domain.AuditEvent
	for _, line := range strings.Split(strings.TrimSpace(c.mustRun("audit", "list", "--format", "json")), "\n") {
		var e domain.AuditEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	var p trail.EventProof
	if err := json.Unmarshal([]byte(c.mustRun("audit", "prove", string(events[len(events)-1].ID))), &p); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(p.Proof, "\n\n"+string(signed.Note)) {
		t.Fatalf("not proved against the file's note:\n%s", p.Proof)
	}
	v, err := checkpoint.Verifier(origin, pub)
	if err != nil {
		t.Fatal(err)
	}
	checkEventProof(t, p, v)
}

// The auditor's own checker (docs/examples/auditcheck, x/mod alone) accepts what this service
// makes: the checkpoints serve signs, the proofs audit prove writes, the tiles of the store's tree
// as serve serves them; and refuses the proof file once an event in it is changed.
func TestAuditCheckerAcceptsTheServicesProofs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := filepath.Join(t.TempDir(), "auditcheck")
	if out, err := exec.Command("go", "build", "-o", bin, "../../docs/examples/auditcheck").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		signCheckpoint(t, c, file)
		c.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = file
		var newest domain.AuditEvent
		if err := json.Unmarshal([]byte(c.mustRun("audit", "list", "--format", "json", "--limit", "1")), &newest); err != nil {
			t.Fatal(err)
		}
		proofs := filepath.Join(t.TempDir(), "subject.json")
		c.mustRun("audit", "prove", "--target-id", newest.TargetID, "--out", proofs)
		key := strings.TrimSpace(c.mustRun("apikey", "create", "--user", string(testStaff)))
		signCheckpoint(t, c, file) // the service's newest checkpoint is past the proofs'
		vkey := strings.TrimSpace(c.mustRun("audit", "public-key", "--note"))

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

		run := func(file string, online bool) (string, error) {
			args := []string{"-key", vkey, "-proof", file}
			if online {
				args = append(args, "-url", srv.URL, "-credential", "Api-Key "+key)
			}
			out, err := exec.Command(bin, args...).CombinedOutput()
			return string(out), err
		}
		for _, online := range []bool{false, true} {
			if out, err := run(proofs, online); err != nil || !strings.HasPrefix(out, "ok: event "+string(newest.ID)) {
				t.Fatalf("online %v: %v\n%s", online, err, out)
			}
		}
		b, err := os.ReadFile(proofs)
		if err != nil {
			t.Fatal(err)
		}
		changed := filepath.Join(t.TempDir(), "changed.json")
		if err := os.WriteFile(changed, []byte(strings.Replace(string(b), `"outcome": "granted"`, `"outcome": "denied"`, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := run(changed, false); err == nil || !strings.HasPrefix(out, "FAILED: ") {
			t.Fatalf("a changed event: %v\n%s", err, out)
		}
	})
}
