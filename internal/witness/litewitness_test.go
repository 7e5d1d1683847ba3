package witness

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"backoffice/internal/checkpoint"
)

// litewitnessVar names the litewitness binary (witnessctl beside it) for TestLitewitness. When it
// is set (.ci/run sets it) the test must run: anything it needs that is missing fails it. When it
// is not, the test looks litewitness up on PATH and skips without it.
const litewitnessVar = "BACKOFFICE_TEST_LITEWITNESS"

// TestLitewitness runs the client against litewitness (filippo.io/torchwood), a witness nobody
// here wrote, on checkpoints as serve signs them: it cosigns the log's checkpoints as the tree
// grows, refuses a fork (another tree signed with the same key) and a rollback, and the client
// reports each refusal naming the witness.
func TestLitewitness(t *testing.T) {
	if testing.Short() {
		t.Skip("runs litewitness")
	}
	lw := startLitewitness(t)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	logKey, err := checkpoint.VerifierKey(origin, pub)
	if err != nil {
		t.Fatal(err)
	}
	lw.ctl(t, "add-log", "-origin", origin)
	lw.ctl(t, "add-key", "-origin", origin, "-key", logKey)
	logVerifier, err := checkpoint.Verifier(origin, pub)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePolicy([]byte("witness lite " + lw.vkey + " " + lw.url + "\nquorum lite\n"))
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
	if list := lw.ctl(t, "list-logs"); !strings.Contains(list, `"size":12`) {
		t.Errorf("litewitness's own record: %s; want size 12", list)
	}
}

type litewitness struct {
	url  string
	vkey string
	db   string
	ctl  func(t *testing.T, args ...string) string
}

// startLitewitness runs litewitness with a key of its own in an ssh-agent of its own, on a
// loopback port, and returns once it answers.
func startLitewitness(t *testing.T) *litewitness {
	bin, required := os.Getenv(litewitnessVar), true
	if bin == "" {
		required = false
		var err error
		if bin, err = exec.LookPath("litewitness"); err != nil {
			t.Skipf("litewitness is not on PATH and %s is not set: the test against a real witness is skipped (go install filippo.io/torchwood/cmd/litewitness@v0.6.1 filippo.io/torchwood/cmd/witnessctl@v0.6.1)", litewitnessVar)
		}
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v", litewitnessVar, err)
	}
	need := func(name string) string {
		path, err := exec.LookPath(name)
		if err != nil {
			path = filepath.Join(filepath.Dir(bin), name)
			if _, statErr := os.Stat(path); statErr != nil {
				if required {
					t.Fatalf("%s is set but %s is not on PATH nor beside litewitness", litewitnessVar, name)
				}
				t.Skipf("%s is not on PATH: the test against litewitness is skipped", name)
			}
		}
		return path
	}
	witnessctl := filepath.Join(filepath.Dir(bin), "witnessctl")
	if _, err := os.Stat(witnessctl); err != nil {
		witnessctl = need("witnessctl")
	}
	keygen, agentBin, add := need("ssh-keygen"), need("ssh-agent"), need("ssh-add")

	// A short directory: a Unix socket's path has a small limit.
	dir, err := os.MkdirTemp("", "lw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	run(t, nil, keygen, "-q", "-t", "ed25519", "-N", "", "-C", "backoffice-witness-test", "-f", filepath.Join(dir, "key"))
	pub, fingerprint := readSSHKey(t, filepath.Join(dir, "key.pub"))
	sock := startAgent(t, agentBin, filepath.Join(dir, "agent.sock"))
	run(t, []string{"SSH_AUTH_SOCK=" + sock}, add, "-q", filepath.Join(dir, "key"))

	db := filepath.Join(dir, "witness.db")
	lw := &litewitness{db: db, ctl: func(t *testing.T, args ...string) string {
		return run(t, nil, witnessctl, append(append(args[:1:1], "-db", db), args[1:]...)...)
	}}
	const name = "witness.test/lite"
	plain, err := note.NewEd25519VerifierKey(name, pub)
	if err != nil {
		t.Fatal(err)
	}
	if lw.vkey, err = fnote.VKeyToCosignatureV1(plain); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	lw.url = "http://" + addr
	var logs syncBuffer
	cmd := exec.Command(bin, "-db", db, "-name", name, "-key", fingerprint, "-ssh-agent", sock, "-listen", addr)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	exited := startProcess(t, cmd)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("litewitness's log:\n%s", logs.String())
		}
	})
	waitAnswers(t, lw.url+"/", exited, &logs)
	return lw
}

// readSSHKey reads an OpenSSH Ed25519 public key file: the key, and its fingerprint as ssh-keygen
// -l and litewitness's -key write it.
func readSSHKey(t *testing.T, path string) (ed25519.PublicKey, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) < 2 || f[0] != "ssh-ed25519" {
		t.Fatalf("%s: not an ssh-ed25519 key: %q", path, b)
	}
	blob, err := base64.StdEncoding.DecodeString(f[1])
	if err != nil {
		t.Fatal(err)
	}
	// The wire form: a string "ssh-ed25519", then a string of the 32-byte key (RFC 8709).
	const head = 4 + len("ssh-ed25519") + 4
	if len(blob) != head+ed25519.PublicKeySize || binary.BigEndian.Uint32(blob[head-4:]) != ed25519.PublicKeySize {
		t.Fatalf("%s: unexpected key encoding", path)
	}
	sum := sha256.Sum256(blob)
	return ed25519.PublicKey(blob[head:]), "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// startAgent runs an ssh-agent in the foreground on sock, and returns once it listens: it
// writes its variables only after it has bound the socket.
func startAgent(t *testing.T, bin, sock string) string {
	t.Helper()
	seen := make(chan struct{})
	out := &syncBuffer{wanted: "SSH_AUTH_SOCK=", seen: seen}
	cmd := exec.Command(bin, "-D", "-a", sock)
	cmd.Stdout, cmd.Stderr = out, out
	exited := startProcess(t, cmd)
	select {
	case <-seen:
		return sock
	case <-exited:
		t.Fatalf("ssh-agent exited: %s", out.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("ssh-agent did not start: %s", out.String())
	}
	return ""
}

// startProcess starts cmd and kills it when the test ends; the channel closes when it exits.
func startProcess(t *testing.T, cmd *exec.Cmd) <-chan struct{} {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	return exited
}

// waitAnswers waits until url answers 200, the process exits, or half a minute passes.
func waitAnswers(t *testing.T, url string, exited <-chan struct{}, logs *syncBuffer) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		if res, err := http.Get(url); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-exited:
			t.Fatalf("litewitness exited:\n%s", logs.String())
		case <-deadline:
			t.Fatalf("litewitness did not answer at %s:\n%s", url, logs.String())
		case <-tick.C:
		}
	}
}

// run runs a command to its end, failing the test if it fails, and returns its output.
func run(t *testing.T, env []string, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// syncBuffer is a bytes.Buffer a process writes to while the test reads it; seen, if not nil,
// closes once wanted has been written.
type syncBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	wanted string
	seen   chan struct{}
	closed bool
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	if s.seen != nil && !s.closed && strings.Contains(s.b.String(), s.wanted) {
		close(s.seen)
		s.closed = true
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
