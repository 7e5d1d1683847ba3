package witness

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"backoffice/internal/checkpoint"
	"backoffice/internal/witness/witnesstest"
)

// TestLitewitness runs the client against litewitness (filippo.io/torchwood), a witness nobody
// here wrote, on checkpoints as serve signs them: it cosigns the log's checkpoints as the tree
// grows, refuses a fork (another tree signed with the same key) and a rollback, and the client
// reports each refusal naming the witness.
func TestLitewitness(t *testing.T) {
	if testing.Short() {
		t.Skip("runs litewitness")
	}
	lw := witnesstest.Start(t)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	logKey, err := checkpoint.VerifierKey(origin, pub)
	if err != nil {
		t.Fatal(err)
	}
	lw.Ctl(t, "add-log", "-origin", origin)
	lw.Ctl(t, "add-key", "-origin", origin, "-key", logKey)
	logVerifier, err := checkpoint.Verifier(origin, pub)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePolicy([]byte("witness lite " + lw.VKey + " " + lw.URL + "\nquorum lite\n"))
	if err != nil {
		t.Fatal(err)
	}
	trail := newTestLog(t, origin, 12, "a", nil, nil)
	fork := newTestLog(t, origin, 12, "b", nil, nil)
	sign := func(l *testLog, n int64) []byte {
		c, err := checkpoint.Sign(checkpoint.Head{Size: n, Root: l.root(t, n), Digest: make([]byte, 32)}, origin, "", time.Now(), "k1", priv)
		if err != nil {
			t.Fatal(err)
		}
		return c.Note
	}
	c := &Client{Timeout: 30 * time.Second}
	var mu sync.Mutex
	var proofs [][2]int64
	proofOf := func(l *testLog) ProofFunc {
		return func(ctx context.Context, oldSize, newSize int64) (tlog.TreeProof, error) {
			mu.Lock()
			proofs = append(proofs, [2]int64{oldSize, newSize})
			mu.Unlock()
			return l.proof(ctx, oldSize, newSize)
		}
	}
	cosign := func(msg []byte, old int64, l *testLog) (Outcome, Result) {
		t.Helper()
		out, err := c.Cosign(t.Context(), p, msg, map[string]int64{"lite": old}, proofOf(l))
		if err != nil {
			t.Fatal(err)
		}
		return out, out.Results[0]
	}

	// The first checkpoint, then the next with the proof from the first.
	for _, step := range []struct{ old, size int64 }{{0, 5}, {5, 9}} {
		out, r := cosign(sign(trail, step.size), step.old, trail)
		if r.Err != nil || r.Size != step.size || !out.Met {
			t.Fatalf("size %d from %d: %+v", step.size, step.old, r)
		}
		v, err := p.Check(out.Note, logVerifier)
		if err != nil || !v.Met || strings.Join(v.Signed, ",") != "lite" {
			t.Fatalf("size %d: the cosigned note: %+v %v\n%s", step.size, v, err, out.Note)
		}
		if n, err := note.Open(out.Note, note.VerifierList(logVerifier, p.Witnesses()[0].Verifier())); err != nil || len(n.Sigs) != 2 {
			t.Fatalf("size %d: note.Open of the cosigned note: %v", step.size, err)
		}
	}
	if len(proofs) != 1 || proofs[0] != [2]int64{5, 9} {
		t.Errorf("proofs made: %v, want one from 5 to 9", proofs)
	}

	// What a second database restored from a backup would sign with the same key: another tree,
	// or an older checkpoint. litewitness refuses each; the client says so, naming it.
	for _, tc := range []struct {
		name   string
		msg    []byte
		old    int64
		l      *testLog
		status int
	}{
		{"a fork at the witness's size", sign(fork, 9), 9, fork, http.StatusUnprocessableEntity},
		{"a fork past the witness's size", sign(fork, 12), 9, fork, http.StatusUnprocessableEntity},
		{"a rollback, from a log that forgot the witness's size", sign(trail, 5), 0, trail, http.StatusConflict},
		{"a rollback, from the witness's size", sign(trail, 5), 9, trail, http.StatusBadRequest},
	} {
		out, r := cosign(tc.msg, tc.old, tc.l)
		var e *Error
		if !errors.Is(r.Err, ErrRefused) || !errors.As(r.Err, &e) || e.Status != tc.status || !strings.Contains(r.Err.Error(), "witness lite") || out.Met {
			t.Errorf("%s: %v (met %v); want refused with %d, naming the witness", tc.name, r.Err, out.Met, tc.status)
		}
		if tc.status != http.StatusUnprocessableEntity && !errors.Is(r.Err, ErrBehind) {
			t.Errorf("%s: %v; want ErrBehind", tc.name, r.Err)
		}
		if tc.status == http.StatusConflict && (e == nil || e.Known != 9 || r.Size != 9) {
			t.Errorf("%s: known size %+v; want 9", tc.name, r)
		}
		t.Logf("%s: %v", tc.name, r.Err)
	}

	// A log that lost track of what the witness cosigned learns it from the 409.
	proofs = nil
	out, r := cosign(sign(trail, 12), 0, trail)
	if r.Err != nil || !out.Met || len(proofs) != 1 || proofs[0] != [2]int64{9, 12} {
		t.Fatalf("size 12 from an unknown size: %+v, proofs %v", r, proofs)
	}
	if list := lw.Ctl(t, "list-logs"); !strings.Contains(list, `"size":12`) {
		t.Errorf("litewitness's own record: %s; want size 12", list)
	}
}
