package witness

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/transparency-dev/formats/log"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// testLog is a log's tree of leaves in memory, and the key that signs its checkpoints.
type testLog struct {
	origin   string
	signer   note.Signer
	verifier note.Verifier
	hashes   []tlog.Hash // tlog's stored hashes
	leaves   int64
}

// newTestLog is a log of n leaves whose contents start with seed (another seed: another tree).
func newTestLog(t *testing.T, origin string, n int, seed string, signer note.Signer, verifier note.Verifier) *testLog {
	t.Helper()
	if signer == nil {
		skey, vkey, err := note.GenerateKey(rand.Reader, origin)
		if err != nil {
			t.Fatal(err)
		}
		if signer, err = note.NewSigner(skey); err != nil {
			t.Fatal(err)
		}
		if verifier, err = note.NewVerifier(vkey); err != nil {
			t.Fatal(err)
		}
	}
	l := &testLog{origin: origin, signer: signer, verifier: verifier}
	for i := range n {
		stored, err := tlog.StoredHashes(int64(i), fmt.Appendf(nil, "%s event %d", seed, i), l)
		if err != nil {
			t.Fatal(err)
		}
		l.hashes = append(l.hashes, stored...)
		l.leaves++
	}
	return l
}

// ReadHashes makes testLog a tlog.HashReader.
func (l *testLog) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x >= int64(len(l.hashes)) {
			return nil, fmt.Errorf("no stored hash %d", x)
		}
		out[i] = l.hashes[x]
	}
	return out, nil
}

func (l *testLog) root(t *testing.T, n int64) tlog.Hash {
	t.Helper()
	h, err := tlog.TreeHash(n, l)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// checkpoint is the log's signed checkpoint at size n.
func (l *testLog) checkpoint(t *testing.T, n int64) []byte {
	t.Helper()
	root := l.root(t, n)
	text := log.Checkpoint{Origin: l.origin, Size: uint64(n), Hash: root[:]}.Marshal()
	msg, err := note.Sign(&note.Note{Text: string(text)}, l.signer)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

func (l *testLog) proof(_ context.Context, oldSize, newSize int64) (tlog.TreeProof, error) {
	return tlog.ProveTree(newSize, oldSize, l)
}

// cosigner is a witness's key: its signer and its verifier key.
type cosigner struct {
	name   string
	priv   ed25519.PrivateKey
	signer *fnote.Signer
	vkey   string
}

func newCosigner(t testing.TB, name string) *cosigner {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := note.NewEd25519VerifierKey(name, pub)
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := fnote.VKeyToCosignatureV1(plain)
	if err != nil {
		t.Fatal(err)
	}
	hash := strings.SplitN(vkey, "+", 3)[1]
	signer, err := fnote.NewSignerForCosignatureV1("PRIVATE+KEY+" + name + "+" + hash + "+" + base64.StdEncoding.EncodeToString(append([]byte{keyTypeEd25519Cosignature}, priv.Seed()...)))
	if err != nil {
		t.Fatal(err)
	}
	return &cosigner{name: name, priv: priv, signer: signer, vkey: vkey}
}

// lineAt is a cosignature/v1 line of text made at timestamp ts, as the signer makes one but at a
// time of the test's choosing.
func (c *cosigner) lineAt(text []byte, ts uint64) []byte {
	msg := fmt.Appendf(nil, "cosignature/v1\ntime %d\n%s", ts, text)
	sig := binary.BigEndian.AppendUint32(nil, c.signer.KeyHash())
	sig = binary.BigEndian.AppendUint64(sig, ts)
	sig = append(sig, ed25519.Sign(c.priv, msg)...)
	return []byte(sigPrefix + c.name + " " + base64.StdEncoding.EncodeToString(sig) + "\n")
}

// double is a witness after c2sp.org/tlog-witness, for one log: what litewitness does, in a few
// lines, with a hook to answer otherwise.
type double struct {
	t   *testing.T
	key *cosigner
	log *testLog

	mu       sync.Mutex
	size     int64
	root     tlog.Hash
	requests int
	// answer, if set, is given the request's body and may answer instead (true); it runs
	// without mu held, so that a witness that hangs holds up no other request.
	answer func(w http.ResponseWriter, r *http.Request, body []byte) bool
}

func newDouble(t *testing.T, key *cosigner, l *testLog) (*double, *httptest.Server) {
	d := &double{t: t, key: key, log: l}
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return d, srv
}

func (d *double) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/add-checkpoint" {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	d.mu.Lock()
	d.requests++
	hook := d.answer
	d.mu.Unlock()
	if hook != nil && hook(w, r, body) {
		return
	}
	d.mu.Lock()
	status, answer := d.add(body)
	d.mu.Unlock()
	if status == http.StatusConflict {
		w.Header().Set("Content-Type", "text/x.tlog.size")
	}
	w.WriteHeader(status)
	_, _ = w.Write(answer)
}

// add is add-checkpoint's checks, in the order the protocol gives them.
func (d *double) add(body []byte) (int, []byte) {
	head, msg, ok := bytes.Cut(body, []byte("\n\n"))
	if !ok {
		return http.StatusBadRequest, []byte("no blank line\n")
	}
	lines := strings.Split(string(head), "\n")
	old, err := strconv.ParseInt(strings.TrimPrefix(lines[0], "old "), 10, 64)
	if err != nil || !strings.HasPrefix(lines[0], "old ") || old < 0 {
		return http.StatusBadRequest, []byte("bad old size line\n")
	}
	var proof tlog.TreeProof
	for _, l := range lines[1:] {
		h, err := tlog.ParseHash(l)
		if err != nil {
			return http.StatusBadRequest, []byte("bad proof line\n")
		}
		proof = append(proof, h)
	}
	origin, _, _ := strings.Cut(string(msg), "\n")
	if origin != d.log.origin {
		return http.StatusNotFound, []byte("unknown log\n")
	}
	n, err := note.Open(msg, note.VerifierList(d.log.verifier))
	if err != nil {
		return http.StatusForbidden, []byte("invalid signature\n")
	}
	var c log.Checkpoint
	if _, err := c.Unmarshal([]byte(n.Text)); err != nil {
		return http.StatusBadRequest, []byte("bad checkpoint\n")
	}
	size := int64(c.Size)
	var root tlog.Hash
	copy(root[:], c.Hash)
	if old > size {
		return http.StatusBadRequest, []byte("old size above the checkpoint's\n")
	}
	if old != d.size {
		return http.StatusConflict, fmt.Appendf(nil, "%d\n", d.size)
	}
	if old == 0 && len(proof) > 0 || old > 0 && tlog.CheckTree(proof, size, root, old, d.root) != nil {
		return http.StatusUnprocessableEntity, []byte("bad consistency proof\n")
	}
	d.size, d.root = size, root
	signed, err := note.Sign(&note.Note{Text: n.Text}, d.key.signer)
	if err != nil {
		return http.StatusInternalServerError, []byte(err.Error())
	}
	return http.StatusOK, signed[bytes.LastIndex(signed, []byte("\n\n"))+2:]
}

func (d *double) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.requests
}

// witnessOf is the policy's witness name for key, at url.
func witnessOf(t *testing.T, name string, key *cosigner, url string) Witness {
	t.Helper()
	w, err := NewWitness(name, key.vkey, url)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// noProof is a ProofFunc for exchanges that must need none.
func noProof(t *testing.T) ProofFunc {
	return func(_ context.Context, oldSize, newSize int64) (tlog.TreeProof, error) {
		t.Errorf("a proof from %d to %d was asked for", oldSize, newSize)
		return nil, fmt.Errorf("no proof expected")
	}
}
