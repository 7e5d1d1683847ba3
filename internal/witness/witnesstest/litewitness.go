// Package witnesstest runs litewitness (filippo.io/torchwood), a witness nobody here wrote, for
// the tests of the witness client and of serve's witnessed checkpoints.
package witnesstest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
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
)

// Var names the litewitness binary (witnessctl beside it) for the tests against a real witness. When it
// is set (.ci/run sets it) the test must run: anything it needs that is missing fails it. When it
// is not, the test looks litewitness up on PATH and skips without it.
const Var = "BACKOFFICE_TEST_LITEWITNESS"

// Litewitness is a litewitness process a test started: where it serves add-checkpoint, its
// verifier key (cosignature/v1, note form), its database.
type Litewitness struct {
	URL  string
	VKey string
	DB   string
	ctl  string
}

// Ctl runs witnessctl on the witness's database: Ctl(t, "add-log", "-origin", o).
func (lw *Litewitness) Ctl(t *testing.T, args ...string) string {
	t.Helper()
	return run(t, nil, lw.ctl, append(append(args[:1:1], "-db", lw.DB), args[1:]...)...)
}

// Start runs litewitness with a key of its own in an ssh-agent of its own, on a loopback port,
// and returns once it answers. It skips the test when litewitness is not installed and Var is
// not set.
func Start(t *testing.T) *Litewitness {
	t.Helper()
	bin, required := os.Getenv(Var), true
	if bin == "" {
		required = false
		var err error
		if bin, err = exec.LookPath("litewitness"); err != nil {
			t.Skipf("litewitness is not on PATH and %s is not set: the test against a real witness is skipped (go install filippo.io/torchwood/cmd/litewitness@v0.6.1 filippo.io/torchwood/cmd/witnessctl@v0.6.1)", Var)
		}
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v", Var, err)
	}
	need := func(name string) string {
		path, err := exec.LookPath(name)
		if err != nil {
			path = filepath.Join(filepath.Dir(bin), name)
			if _, statErr := os.Stat(path); statErr != nil {
				if required {
					t.Fatalf("%s is set but %s is not on PATH nor beside litewitness", Var, name)
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
	lw := &Litewitness{DB: db, ctl: witnessctl}
	const name = "witness.test/lite"
	plain, err := note.NewEd25519VerifierKey(name, pub)
	if err != nil {
		t.Fatal(err)
	}
	if lw.VKey, err = fnote.VKeyToCosignatureV1(plain); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	lw.URL = "http://" + addr
	var logs syncBuffer
	cmd := exec.Command(bin, "-db", db, "-name", name, "-key", fingerprint, "-ssh-agent", sock, "-listen", addr)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	exited := startProcess(t, cmd)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("litewitness's log:\n%s", logs.String())
		}
	})
	waitAnswers(t, lw.URL+"/", exited, &logs)
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

// Cosigner is a new witness key named name: its cosignature/v1 signer and verifier key.
func Cosigner(t testing.TB, name string) (note.Signer, string) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		t.Fatal(err)
	}
	cosigVKey, err := fnote.VKeyToCosignatureV1(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return signer, cosigVKey
}
