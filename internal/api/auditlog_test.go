package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/transparency-dev/formats/proof"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"backoffice/internal/api"
	"backoffice/internal/domain"
	"backoffice/internal/testdb"
	"backoffice/internal/trail"
)

// memLog is the trail's Merkle tree in memory, built as the store builds it (tlog.StoredHashes
// over trail.Leaf), for the routes to serve until the store's tree is wired in.
type memLog struct {
	mu     sync.Mutex
	events []domain.AuditEvent
	leaves [][]byte
	hashes []tlog.Hash
	// checkpoints are the signed notes, newest last.
	checkpoints [][]byte
	signer      note.Signer
	verifierKey string
	// cosigners are witnesses that cosign each checkpoint signed from now on.
	cosigners []note.Signer
	// pruned is the newest prune note, nil while none.
	pruned []byte
}

const logOrigin = "backoffice.example/audit"

func newMemLog(t testing.TB) *memLog {
	skey, vkey, err := note.GenerateKey(rand.Reader, logOrigin)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return &memLog{signer: s, verifierKey: vkey}
}

// subjectTag stands in for the keyed tag of a target.
func subjectTag(target string) []byte {
	h := sha256.Sum256([]byte("tag " + target))
	return h[:]
}

// add appends n events, each on one of targets in turn.
func (m *memLog) add(t testing.TB, n int, targets ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for range n {
		seq := int64(len(m.events)) + 1
		target := targets[int(seq)%len(targets)]
		e := domain.AuditEvent{ID: domain.NewID(), At: fixtureNow.Add(time.Duration(seq) * time.Microsecond), ActorUserID: staffUser,
			Action: "principal.decrypt", TargetID: target, Outcome: domain.OutcomeGranted, Detail: fmt.Sprint("ssn ", seq), Seq: seq, ChainKeyID: "k1"}
		leaf := trail.Leaf(subjectTag(target), e)
		hs, err := tlog.StoredHashes(seq-1, leaf, m.reader())
		if err != nil {
			t.Fatal(err)
		}
		m.events, m.leaves, m.hashes = append(m.events, e), append(m.leaves, leaf), append(m.hashes, hs...)
	}
}

// sign signs a checkpoint of the tree as it is now.
func (m *memLog) sign(t testing.TB) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	size := int64(len(m.events))
	root, err := tlog.TreeHash(size, m.reader())
	if err != nil {
		t.Fatal(err)
	}
	msg, err := note.Sign(&note.Note{Text: fmt.Sprintf("%s\n%d\n%s\n", logOrigin, size, base64.StdEncoding.EncodeToString(root[:]))}, append([]note.Signer{m.signer}, m.cosigners...)...)
	if err != nil {
		t.Fatal(err)
	}
	m.checkpoints = append(m.checkpoints, msg)
	return msg
}

// reader reads the stored hashes; the caller holds mu.
func (m *memLog) reader() tlog.HashReader {
	return tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x < 0 || x >= int64(len(m.hashes)) {
				return nil, fmt.Errorf("stored hash %d past %d", x, len(m.hashes))
			}
			out[i] = m.hashes[x]
		}
		return out, nil
	})
}

func (m *memLog) AuditTreeSize(context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int64(len(m.events)), nil
}

func (m *memLog) AuditHashReader(context.Context) tlog.HashReader {
	return tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.reader().ReadHashes(idx)
	})
}

func (m *memLog) AuditLeaves(_ context.Context, start, end int64) ([][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if start < 0 || end > int64(len(m.leaves)) || start > end {
		return nil, fmt.Errorf("leaves [%d, %d) past %d", start, end, len(m.leaves))
	}
	out := make([][]byte, 0, end-start)
	for _, l := range m.leaves[start:end] {
		out = append(out, bytes.Clone(l))
	}
	return out, nil
}

func (m *memLog) AuditEventAt(_ context.Context, index int64) (domain.AuditEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if index < 0 || index >= int64(len(m.events)) {
		return domain.AuditEvent{}, domain.ErrNotFound
	}
	return m.events[index], nil
}

func (m *memLog) AuditEventIndex(_ context.Context, id domain.ID) (domain.AuditEvent, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, e := range m.events {
		if e.ID == id {
			return e, int64(i), nil
		}
	}
	return domain.AuditEvent{}, 0, domain.ErrNotFound
}

func (m *memLog) AuditPruneNote(context.Context) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pruned, m.pruned != nil, nil
}

func (m *memLog) LatestCheckpoint() ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.checkpoints) == 0 {
		return nil, false
	}
	return m.checkpoints[len(m.checkpoints)-1], true
}

// withAuditLog serves the harness's routes with m as the trail's tree and checkpoints.
func (h *harness) withAuditLog(m *memLog) {
	h.deps.AuditLog, h.deps.Checkpoints = m, m
	h.handler = api.New(h.deps)
}

func newTreeHarness(t *testing.T, events int) (*harness, *memLog) {
	h := newHarness(t, testdb.Open(t, "sqlite"))
	m := newMemLog(t)
	m.add(t, events, principalA.String(), principalB.String())
	h.withAuditLog(m)
	return h, m
}

// Hash tiles are the tree's: tlog.CheckTree accepts a tree rebuilt from the served tiles, at
// every level, full and partial, and entry bundles hold each leaf after its length.
func TestAuditTilesAreTheTrees(t *testing.T) {
	h, m := newTreeHarness(t, 70000)
	cp := m.sign(t)
	size, root := checkpointOf(t, cp)
	tiles := map[tlog.Tile][]byte{}
	fetch := tlog.TileReader(tileFetcher{h: h, t: t, seen: tiles})
	thr := tlog.TileHashReader(tlog.Tree{N: size, Hash: root}, fetch)
	// A proof of the last and the first leaf, and of every tile's right edge, reads through tiles.
	for _, i := range []int64{0, 255, 256, 65535, 65536, size - 1} {
		p, err := tlog.ProveRecord(size, i, thr)
		if err != nil {
			t.Fatalf("prove %d from the tiles: %v", i, err)
		}
		if err := tlog.CheckRecord(p, size, root, i, tlog.RecordHash(m.leaves[i])); err != nil {
			t.Fatalf("leaf %d: %v", i, err)
		}
	}
	if len(tiles) == 0 {
		t.Fatal("no tile read")
	}
	// The entry bundle of the partial level 0 tile: 70000 = 273*256 + 112.
	r := h.get("/v1/audit-log/tile/entries/273.p/112", staffKey)
	if r.Status != http.StatusOK {
		t.Fatalf("entries: %d %s", r.Status, r.Body)
	}
	var want []byte
	for _, l := range m.leaves[273*256:] {
		want = binary.BigEndian.AppendUint16(want, uint16(len(l)))
		want = append(want, l...)
	}
	if !bytes.Equal(r.Body, want) {
		t.Fatalf("entry bundle: %d bytes, want %d", len(r.Body), len(want))
	}
	if cc := r.Header.Get("Cache-Control"); cc != "private, max-age=60" {
		t.Errorf("partial tile Cache-Control %q", cc)
	}
	r = h.get("/v1/audit-log/tile/entries/x001/000", staffKey) // entries 256000.. of 70000: past the tree
	wantError(t, r, http.StatusNotFound, "not_found")
	r = h.get("/v1/audit-log/tile/0/000", staffKey)
	if r.Status != http.StatusOK || len(r.Body) != 256*32 || r.Header.Get("Cache-Control") != "private, max-age=31536000, immutable" {
		t.Fatalf("full tile: %d, %d bytes, %q", r.Status, len(r.Body), r.Header.Get("Cache-Control"))
	}
	if r := h.do(http.MethodHead, "/v1/audit-log/tile/0/000", "Api-Key "+staffKey); r.Status != http.StatusOK {
		t.Fatalf("HEAD: %d", r.Status)
	}
}

// tileFetcher reads tiles through the routes.
type tileFetcher struct {
	h    *harness
	t    *testing.T
	seen map[tlog.Tile][]byte
}

func (f tileFetcher) Height() int { return trail.TileHeight }

func (f tileFetcher) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, tile := range tiles {
		r := f.h.get("/v1/audit-log/tile/"+trail.TilePath(tile), staffKey)
		if r.Status != http.StatusOK {
			return nil, fmt.Errorf("tile %s: %d %s", trail.TilePath(tile), r.Status, r.Body)
		}
		out[i] = r.Body
		f.seen[tile] = r.Body
	}
	return out, nil
}

func (f tileFetcher) SaveTiles([]tlog.Tile, [][]byte) {}

func checkpointOf(t testing.TB, cp []byte) (int64, tlog.Hash) {
	c, err := trail.CheckpointOf(cp)
	if err != nil {
		t.Fatal(err)
	}
	var h tlog.Hash
	copy(h[:], c.Hash)
	return int64(c.Size), h
}

// Tile paths: a malformed one is 400 naming its part, one the tree does not hold 404, never a
// 5xx; the trail's readers alone may read them.
func TestAuditTilePaths(t *testing.T) {
	h, _ := newTreeHarness(t, 300)
	cases := map[string]int{
		"0/000":                               http.StatusOK,
		"0/001.p/44":                          http.StatusOK,
		"0/001.p/43":                          http.StatusOK, // an older checkpoint's partial tile
		"1/000.p/1":                           http.StatusOK,
		"entries/000":                         http.StatusOK,
		"0/001":                               http.StatusNotFound,
		"0/001.p/45":                          http.StatusNotFound,
		"1/000.p/2":                           http.StatusNotFound,
		"2/000.p/1":                           http.StatusNotFound,
		"63/x009/x223/x372/807":               http.StatusNotFound,
		"0/x009/x223/x372/x036/x854/x775/807": http.StatusNotFound,
		"0/1":                                 http.StatusBadRequest,
		"64/000":                              http.StatusBadRequest,
		"0/x000/001":                          http.StatusBadRequest,
		"0/001.p/256":                         http.StatusBadRequest,
		"0/001.p/0":                           http.StatusBadRequest,
		"0":                                   http.StatusBadRequest,
		"0/%30%30%30":                         http.StatusBadRequest,
		"0/000%2F":                            http.StatusBadRequest,
		"0/x009/x223/x372/x036/x854/x775/808": http.StatusBadRequest,
	}
	for p, status := range cases {
		r := h.get("/v1/audit-log/tile/"+p, staffKey)
		if r.Status != status {
			t.Errorf("%s: %d, want %d: %s", p, r.Status, status, r.Body)
		}
		if status == http.StatusBadRequest && !strings.Contains("level index width", r.err(t).Parameter) {
			t.Errorf("%s: parameter %q", p, r.err(t).Parameter)
		}
	}
	wantError(t, h.get("/v1/audit-log/tile/0/000", partnerAKey), http.StatusForbidden, "forbidden")
	wantError(t, h.get("/v1/audit-log/tile/0/000", noPermKey), http.StatusForbidden, "forbidden")
	wantError(t, h.do(http.MethodGet, "/v1/audit-log/tile/0/000", ""), http.StatusUnauthorized, "unauthenticated")
	wantError(t, h.do(http.MethodPost, "/v1/audit-log/tile/0/000", "Api-Key "+staffKey), http.StatusMethodNotAllowed, "method_not_allowed")
}

// FuzzAuditTilePath: no path below tile/ gets a 5xx, and an error is the error body.
func FuzzAuditTilePath(f *testing.F) {
	for _, s := range []string{"0/000", "entries/001.p/44", "0/x001/000", "1/000.p/1", "63/000", "0/%2e%2e", "0/000.p/%34%34"} {
		f.Add(s)
	}
	st, ring := fixtureStore(f, "sqlite")
	m := newMemLog(f)
	m.add(f, 300, principalA.String())
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	h := api.New(api.Deps{Store: st, Ring: ring, Logger: log, Now: func() time.Time { return fixtureNow }, AuditLog: m, Checkpoints: m})
	f.Fuzz(func(t *testing.T, p string) {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		u := &url.URL{Path: "/v1/audit-log/tile/" + p}
		if strings.Contains(p, "%") {
			u = &url.URL{Path: "/v1/audit-log/tile/", RawPath: "/v1/audit-log/tile/" + p}
			if unescaped, err := url.PathUnescape(p); err != nil {
				return
			} else {
				u.Path += unescaped
			}
		}
		req.URL, req.RequestURI = u, u.RequestURI()
		req.Header.Set("Authorization", "Api-Key "+staffKey)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%q: %d %s", p, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			checkErrorBody(t, req, response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()})
		}
	})
}

type eventProof struct {
	Event domain.AuditEvent `json:"event"`
	Proof string            `json:"proof"`
}

// An event's proof checks with x/mod's tlog and note against the log's key: the checkpoint's
// signature, the leaf recomputed from the served event and its tag, and its inclusion.
func TestAuditEventProof(t *testing.T) {
	h, m := newTreeHarness(t, 1000)
	id := m.events[700].ID
	wantError(t, h.get("/v1/audit-events/"+id.String()+"/proof", staffKey), http.StatusConflict, "not_checkpointed")
	m.sign(t)
	m.add(t, 10, principalA.String()) // a newer event than the checkpoint
	wantError(t, h.get("/v1/audit-events/"+m.events[1005].ID.String()+"/proof", staffKey), http.StatusConflict, "not_checkpointed")

	r := h.get("/v1/audit-events/"+id.String()+"/proof", staffKey)
	if r.Status != http.StatusOK || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("proof: %d %s", r.Status, r.Body)
	}
	var p eventProof
	r.decode(t, &p)
	var tp proof.TLogProof
	if err := tp.Unmarshal([]byte(p.Proof)); err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(m.verifierKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(tp.Checkpoint, note.VerifierList(v)); err != nil {
		t.Fatalf("checkpoint signature: %v", err)
	}
	size, root := checkpointOf(t, tp.Checkpoint)
	if tp.Index != 700 || p.Event.ID != id || size != 1000 || len(tp.Hashes) > 10 {
		t.Fatalf("index %d, event %s, size %d, %d hashes", tp.Index, p.Event.ID, size, len(tp.Hashes))
	}
	hashes := make(tlog.RecordProof, len(tp.Hashes))
	for i, x := range tp.Hashes {
		hashes[i] = x
	}
	leaf := trail.Leaf(tp.ExtraData, p.Event)
	if err := tlog.CheckRecord(hashes, size, root, int64(tp.Index), tlog.RecordHash(leaf)); err != nil {
		t.Fatalf("inclusion: %v", err)
	}
	changed := p.Event
	changed.Detail += " "
	if tlog.CheckRecord(hashes, size, root, int64(tp.Index), tlog.RecordHash(trail.Leaf(tp.ExtraData, changed))) == nil {
		t.Fatal("a changed event checks")
	}
}

// The proof's refusals: a malformed id is 400, an unknown one 404, the trail's readers alone may
// ask, and every attempt is recorded as a read of the trail.
func TestAuditEventProofRefusals(t *testing.T) {
	h, m := newTreeHarness(t, 10)
	m.sign(t)
	wantError(t, h.get("/v1/audit-events/nope/proof", staffKey), http.StatusBadRequest, "invalid_parameter")
	wantError(t, h.get("/v1/audit-events/"+domain.NewID().String()+"/proof", staffKey), http.StatusNotFound, "not_found")
	wantError(t, h.get("/v1/audit-events/"+m.events[3].ID.String()+"/proof", partnerAKey), http.StatusForbidden, "forbidden")
	wantError(t, h.get("/v1/audit-events/"+m.events[3].ID.String()+"/proof", noPermKey), http.StatusForbidden, "forbidden")
	if r := h.do(http.MethodHead, "/v1/audit-events/"+m.events[3].ID.String()+"/proof", "Api-Key "+staffKey); r.Status != http.StatusOK {
		t.Fatalf("HEAD: %d", r.Status)
	}
	p := h.auditPage(t, staffKey, "action=audit_event.read&size=100")
	var outcomes []string
	for _, e := range p.Data {
		if strings.HasPrefix(e.Detail, "proof ") {
			outcomes = append(outcomes, e.Outcome)
		}
	}
	if strings.Join(outcomes, ",") != "granted,denied,denied,not_found,invalid" {
		t.Fatalf("recorded proof reads, newest first: %v", outcomes)
	}
}

// A tree whose leaf is not its event's, or whose hashes do not prove the checkpoint, serves no
// proof: the route reads back what it serves.
func TestAuditEventProofRefusesATreeThatDisagrees(t *testing.T) {
	h, m := newTreeHarness(t, 20)
	m.sign(t)
	m.mu.Lock()
	m.events[5].Detail = "changed after the leaf"
	m.mu.Unlock()
	if r := h.get("/v1/audit-events/"+m.events[5].ID.String()+"/proof", staffKey); r.Status != http.StatusInternalServerError {
		t.Fatalf("a changed event: %d %s", r.Status, r.Body)
	}
	m.mu.Lock()
	m.hashes[tlog.StoredHashIndex(0, 8)][0] ^= 1 // leaf 9's sibling
	m.mu.Unlock()
	if r := h.get("/v1/audit-events/"+m.events[9].ID.String()+"/proof", staffKey); r.Status != http.StatusInternalServerError {
		t.Fatalf("a changed hash: %d %s", r.Status, r.Body)
	}
}
