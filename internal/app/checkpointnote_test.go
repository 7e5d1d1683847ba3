package app

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"backoffice/internal/checkpoint"
	"backoffice/internal/secrets"
	"backoffice/internal/testdb"
)

// ringOf is the master key ring c runs with.
func ringOf(t *testing.T, c *cli) *secrets.Ring {
	t.Helper()
	ring, err := masterRing(Config{MasterKeys: secret(c.vars["BACKOFFICE_MASTER_KEYS"])})
	if err != nil {
		t.Fatal(err)
	}
	return ring
}

// The verifier key `audit public-key --note` prints is one note.NewVerifier reads, and it checks
// the checkpoint serve signed, with x/mod's note.Open and formats' log.ParseCheckpoint, which read
// back the size and the root of the store's tree; the checkpointer holds that note for GET
// /v1/audit-log/checkpoint, from its tick and, on a start, from its file. Under another origin the
// key is named by it.
func TestPublicKeyNoteVerifiesServesCheckpoint(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		cp := signCheckpoint(t, c, file)
		vkey := strings.TrimSpace(c.mustRun("audit", "public-key", "--note"))
		v, err := note.NewVerifier(vkey)
		if err != nil || v.Name() != checkpoint.DefaultOrigin {
			t.Fatalf("note.NewVerifier(%q): %v", vkey, err)
		}
		if _, err := note.Open(cp.Note, note.VerifierList(v)); err != nil {
			t.Fatalf("note.Open: %v\n%s", err, cp.Note)
		}
		lc, _, _, err := log.ParseCheckpoint(cp.Note, checkpoint.DefaultOrigin, v)
		if err != nil {
			t.Fatal(err)
		}
		st := testdb.OpenAsIs(t, url)
		root, err := tlog.TreeHash(int64(lc.Size), st.AuditHashReader(context.Background()))
		if err != nil || lc.Size != 3 || base64.StdEncoding.EncodeToString(lc.Hash) != base64.StdEncoding.EncodeToString(root[:]) {
			t.Fatalf("size %d root %x, the store's %x: %v", lc.Size, lc.Hash, root, err)
		}
		var logs lockedBuffer
		started, err := newCheckpointer(file, st, ringOf(t, c), newLogger(&logs, 0))
		if err != nil {
			t.Fatal(err)
		}
		if served, ok := started.LatestCheckpoint(); !ok || string(served) != string(cp.Note) {
			t.Fatalf("a checkpointer started on the file serves %q", served)
		}
		c.vars["BACKOFFICE_AUDIT_ORIGIN"] = "pay.example.com/audit"
		other := strings.TrimSpace(c.mustRun("audit", "public-key", "--note"))
		if !strings.HasPrefix(other, "pay.example.com/audit+") || other[strings.LastIndex(other, "+"):] != vkey[strings.LastIndex(vkey, "+"):] {
			t.Fatalf("under another origin: %q (was %q)", other, vkey)
		}
	})
}

// A checkpoints file an earlier release wrote (version 1 lines) keeps verifying: serve appends
// its notes after it, the first naming the last line, and audit verify checks both; a line
// altered since is still caught.
func TestVersion1FileCarriesOn(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		ctx := context.Background()
		st := testdb.OpenAsIs(t, url)
		ring := ringOf(t, c)
		rep, err := st.VerifyAuditChain(ctx, ring, nil)
		if err != nil || rep.Break != nil {
			t.Fatalf("verify: %v %v", rep.Break, err)
		}
		keyID := ring.ActiveKeyID()
		key, err := ring.CheckpointKey(keyID)
		if err != nil {
			t.Fatal(err)
		}
		old := checkpoint.Checkpoint{V: 1, Seq: rep.Head.Seq, Head: rep.Head.Hash, Digest: hex.EncodeToString(rep.Digest),
			At: "2026-11-25T12:00:00Z", KeyID: keyID}
		old.Sig = base64.StdEncoding.EncodeToString(ed25519.Sign(key, old.Message()))
		line, _ := json.Marshal(old)
		if err := os.WriteFile(file, append(line, '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
		wantVerify(t, c, nil, "checkpoints: 1 matched", "--checkpoints", file)
		c.mustRun("apikey", "create", "--user", string(testStaff))
		cp := signCheckpoint(t, c, file)
		read, err := checkpoint.ReadFile(file)
		if err != nil || len(read.Entries) != 2 || read.Entries[0].IsNote() || !cp.IsNote() || cp.Seq != 4 || cp.Prev != read.Entries[0].ID() {
			t.Fatalf("a note after the line: %+v %v", read.Entries, err)
		}
		if !strings.HasPrefix(readFile(t, file), string(line)+"\n\n"+checkpoint.DefaultOrigin+"\n4\n") {
			t.Fatalf("the file:\n%s", readFile(t, file))
		}
		wantVerify(t, c, nil, "checkpoints: 2 matched", "--checkpoints", file)
		altered := strings.Replace(readFile(t, file), `"seq":3`, `"seq":2`, 1)
		os.WriteFile(file, []byte(altered), 0o600)
		wantVerify(t, c, ErrCannotCheck, "does not hold", "--checkpoints", file)
	})
}

// A checkpoint whose tree the log does not extend (a note of another history at the same size,
// signed under the ring's key: the trail rewritten under the checkpoint) is refused wherever a
// newer one is accepted: serve, whose walk starts from it, finds the store's tree does not extend
// it (before any new event too), signs nothing after it and says why, naming both sizes; audit
// verify calls the log broken.
func TestInconsistentCheckpointRefused(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		cp := signCheckpoint(t, c, file)
		ring := ringOf(t, c)
		key, err := ring.CheckpointKey(ring.ActiveKeyID())
		if err != nil {
			t.Fatal(err)
		}
		digest, _ := hex.DecodeString(cp.Digest)
		forged, err := checkpoint.Sign(checkpoint.Head{Size: cp.Seq, Root: tlog.RecordHash([]byte("another history")), Link: cp.Head, Digest: digest},
			checkpoint.DefaultOrigin, cp.Prev, time.Now(), ring.ActiveKeyID(), key)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(file, append(forged.Note, '\n'), 0o600)
		wantVerify(t, c, errAuditChainBroken, "does not extend the checkpoint of size 3", "--checkpoints", file)
		// With nothing new to sign, the start of the walk still proves the store's tree against it.
		var idle lockedBuffer
		started, err := newCheckpointer(file, testdb.OpenAsIs(t, url), ring, newLogger(&idle, 0))
		if err != nil {
			t.Fatal(err)
		}
		started.tick(context.Background())
		if s := idle.String(); !strings.Contains(s, `"msg":"audit checkpoint not signed"`) || !strings.Contains(s, "the tree of size 3 does not extend the checkpoint of size 3") {
			t.Fatalf("the walk started from a checkpoint the store's tree does not extend:\n%s", s)
		}
		c.mustRun("apikey", "create", "--user", string(testStaff))
		var logs lockedBuffer
		serving, err := newCheckpointer(file, testdb.OpenAsIs(t, url), ring, newLogger(&logs, 0))
		if err != nil {
			t.Fatal(err)
		}
		serving.tick(context.Background())
		if read, _ := checkpoint.ReadFile(file); len(read.Entries) != 1 {
			t.Fatalf("signed after an inconsistent checkpoint: %d checkpoints", len(read.Entries))
		}
		if s := logs.String(); !strings.Contains(s, `"level":"ERROR","msg":"audit checkpoint not signed"`) ||
			!strings.Contains(s, "the tree of size 4 does not extend the checkpoint of size 3") {
			t.Fatalf("no error naming both sizes:\n%s", s)
		}
	})
}

// serve's start reads only the end of the checkpoints file: a file damaged further back than
// that end (here, lines that are no checkpoint before its last two) starts serve, which carries
// on from the last checkpoint, while audit verify, which reads the whole file, says it cannot
// check it. A last checkpoint whose signature does not hold still refuses the start.
func TestCheckpointerStartsFromTheFileEnd(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		signCheckpoint(t, c, file)
		c.mustRun("apikey", "create", "--user", string(testStaff))
		last := signCheckpoint(t, c, file)
		damage := strings.Repeat("not a checkpoint\n", 4<<10) // farther back than the end serve reads
		os.WriteFile(file, []byte(damage+"\n"+readFile(t, file)), 0o600)
		wantVerify(t, c, ErrCannotCheck, "not a checkpoint", "--checkpoints", file)

		c.mustRun("apikey", "create", "--user", string(testStaff))
		var logs lockedBuffer
		serving, err := newCheckpointer(file, testdb.OpenAsIs(t, url), ringOf(t, c), newLogger(&logs, 0))
		if err != nil {
			t.Fatalf("serve did not start on a file whose end holds: %v", err)
		}
		if err := serving.sign(context.Background()); err != nil {
			t.Fatal(err)
		}
		tail, err := checkpoint.ReadLast(file)
		if err != nil || tail.Last == nil || tail.Last.Prev != last.ID() || tail.Last.Seq <= last.Seq {
			t.Fatalf("the checkpoint serve signed does not follow the file's last: %+v, %v", tail.Last, err)
		}

		forged := []byte(readFile(t, file))
		i := len(forged) - 20 // within the last signature line's base64
		forged[i] = map[bool]byte{true: 'B', false: 'A'}[forged[i] == 'A']
		os.WriteFile(file, forged, 0o600)
		if _, err := newCheckpointer(file, testdb.OpenAsIs(t, url), ringOf(t, c), newLogger(&logs, 0)); err == nil || !strings.Contains(err.Error(), "does not hold") {
			t.Fatalf("serve started on a file whose last checkpoint's signature does not hold: %v", err)
		}
	})
}

// audit verify --from-checkpoint checks the trusted checkpoint's signature and the tree's
// consistency with it, then walks only the events after it, and says which seqs it proved and
// which it did not walk: an event changed before the trusted point is not walked, and exit 0
// claims only the seqs after it (a whole verify finds it); one changed after it is broken; a
// checkpoint whose signature does not hold, or a file of many, cannot be checked.
func TestVerifyFromATrustedCheckpoint(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		cp := signCheckpoint(t, c, file) // seq 3
		trusted := filepath.Join(t.TempDir(), "trusted")
		os.WriteFile(trusted, cp.Note, 0o600)
		wantVerify(t, c, nil, "intact after the trusted checkpoint: no events after seq 3", "--from-checkpoint", trusted)
		c.mustRun("apikey", "create", "--user", string(testStaff))
		c.mustRun("apikey", "create", "--user", string(testStaff))
		out := wantVerify(t, c, nil, "intact after the trusted checkpoint: seq 4-5 proved (2 events", "--from-checkpoint", trusted)
		if !strings.Contains(out, "not walked: seq 1-3") {
			t.Fatalf("the report does not name the seqs it did not walk:\n%s", out)
		}

		sqlOn(t, url, `UPDATE audit_events SET detail = 'nothing to see' WHERE seq = 2`)
		out = wantVerify(t, c, nil, "intact after the trusted checkpoint: seq 4-5 proved", "--from-checkpoint", trusted)
		if strings.Contains(out, "seq 1-5") || !strings.Contains(out, "not walked: seq 1-3") {
			t.Fatalf("the report claims the seqs before the trusted checkpoint:\n%s", out)
		}
		wantVerify(t, c, errAuditChainBroken, "seq 2", "--checkpoints", file)
		sqlOn(t, url, `UPDATE audit_events SET detail = 'something' WHERE seq = 2`)

		sqlOn(t, url, `UPDATE audit_events SET detail = 'nothing to see' WHERE seq = 5`)
		wantVerify(t, c, errAuditChainBroken, "seq 5", "--from-checkpoint", trusted)

		forged := []byte(string(cp.Note))
		i := len(forged) - 20
		forged[i] = map[bool]byte{true: 'B', false: 'A'}[forged[i] == 'A']
		os.WriteFile(trusted, forged, 0o600)
		wantVerify(t, c, ErrCannotCheck, "does not hold", "--from-checkpoint", trusted)
		os.WriteFile(trusted, append(append(cp.Note, '\n'), cp.Note...), 0o600)
		wantVerify(t, c, ErrCannotCheck, "holds 2 checkpoints", "--from-checkpoint", trusted)
	})
}

// A trail whose newest events have no tree rows yet (as a replica of the release before the tree
// writes them) is not signed; once a process given the ring has built the rows, the next tick
// walks again from the last checkpoint and signs, without a restart.
func TestCheckpointerSignsOnceTheTreeIsBuilt(t *testing.T) {
	eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
		var logs lockedBuffer
		cp, err := newCheckpointer(file, testdb.OpenAsIs(t, url), testdb.Ring(t, "k1"), newLogger(&logs, 0))
		if err != nil {
			t.Fatal(err)
		}
		cp.tick(context.Background())
		c.mustRun("apikey", "create", "--user", string(testStaff))
		sqlOn(t, url, fmt.Sprintf(`DELETE FROM audit_tree WHERE id >= %d`, tlog.StoredHashCount(3)))
		cp.tick(context.Background())
		if read, _ := checkpoint.ReadFile(file); len(read.Entries) != 1 || !strings.Contains(logs.String(), "does not hold these events yet") {
			t.Fatalf("signed over events the tree does not hold: %d checkpoints\n%s", len(read.Entries), logs.String())
		}
		builder := testdb.OpenAsIs(t, url)
		builder.SetChainSigner(testdb.Ring(t, "k1"))
		if n, err := builder.BuildAuditTree(context.Background()); err != nil || n != 1 {
			t.Fatalf("BuildAuditTree = %d %v, want 1", n, err)
		}
		cp.tick(context.Background())
		if read, _ := checkpoint.ReadFile(file); len(read.Entries) != 2 || read.Entries[1].Seq != 4 {
			t.Fatalf("after the tree was built: %d checkpoints, want 2, the last of seq 4\n%s", len(read.Entries), logs.String())
		}
	})
}
