// Command auditcheck checks a proof of the backoffice audit trail with nothing of backoffice: the
// standard library and golang.org/x/mod's sumdb/note and sumdb/tlog. Given the log's verifier key
// (note form, `backoffice audit public-key --note`) and a proof file (the answer of
// GET /v1/audit-events/{id}/proof, or `backoffice audit prove`), it checks each proof's
// checkpoint signature, recomputes the event's leaf from the event, and checks its inclusion.
// Given the service's URL and a credential too, it reads the tiles: the hashes it reads must
// rebuild the checkpoint's root, the entry bundle must hold the leaf, and the newest checkpoint
// must be consistent with the proof's.
//
//	go run ./docs/examples/auditcheck -key KEY -proof event.json [-url https://backoffice.example -credential 'Api-Key ...']
//
// It exits 0 when every check passed, 1 when one failed, 2 on bad usage.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// event is an audit event as the service serves it.
type event struct {
	ID          string    `json:"id"`
	At          time.Time `json:"at"`
	ActorUserID string    `json:"actorUserId"`
	Action      string    `json:"action"`
	TargetID    string    `json:"targetId"`
	Outcome     string    `json:"outcome"`
	Detail      string    `json:"detail"`
	Seq         int64     `json:"seq"`
	ChainKeyID  string    `json:"chainKeyId"`
}

type eventProof struct {
	Event event  `json:"event"`
	Proof string `json:"proof"`
}

// proofFile is one proof, or a subject's proofs.
type proofFile struct {
	eventProof
	Proofs []eventProof `json:"proofs"`
}

func main() {
	key := flag.String("key", "", "the log's verifier key (note form)")
	file := flag.String("proof", "", "the proof file (JSON)")
	url := flag.String("url", "", "the service's URL, to check the tiles too (optional)")
	credential := flag.String("credential", "", "the Authorization header for -url, e.g. 'Api-Key ...'")
	flag.Parse()
	if *key == "" || *file == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*key, *file, strings.TrimSuffix(*url, "/"), *credential); err != nil {
		fmt.Println("FAILED:", err)
		os.Exit(1)
	}
}

func run(key, file, url, credential string) error {
	verifier, err := note.NewVerifier(key)
	if err != nil {
		return fmt.Errorf("verifier key: %w", err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var f proofFile
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("proof file: %w", err)
	}
	proofs := f.Proofs
	if f.Proof != "" {
		proofs = append(proofs, f.eventProof)
	}
	if len(proofs) == 0 {
		return errors.New("the proof file holds no proof")
	}
	for _, p := range proofs {
		if err := check(verifier, p, url, credential); err != nil {
			return fmt.Errorf("event %s: %w", p.Event.ID, err)
		}
		fmt.Printf("ok: event %s (seq %d) is in the tree\n", p.Event.ID, p.Event.Seq)
	}
	return nil
}

// check checks one proof, and with url the tiles.
func check(verifier note.Verifier, p eventProof, url, credential string) error {
	tag, index, hashes, signed, err := parseProof(p.Proof)
	if err != nil {
		return err
	}
	tree, err := openCheckpoint(signed, verifier)
	if err != nil {
		return err
	}
	if index != p.Event.Seq-1 {
		return fmt.Errorf("proof index %d is not the event's leaf (seq %d)", index, p.Event.Seq)
	}
	leaf := append(tag, eventHash(p.Event)...)
	if err := tlog.CheckRecord(hashes, tree.N, tree.Hash, index, tlog.RecordHash(leaf)); err != nil {
		return fmt.Errorf("inclusion: %w", err)
	}
	if url == "" {
		return nil
	}
	return checkTiles(url, credential, verifier, tree, index, leaf)
}

// parseProof reads c2sp.org/tlog-proof@v1: the extra line is the leaf's subject tag.
func parseProof(text string) (tag []byte, index int64, hashes tlog.RecordProof, checkpoint []byte, err error) {
	head, checkpointText, ok := strings.Cut(text, "\n\n")
	lines := strings.Split(head, "\n")
	if !ok || len(lines) < 3 || lines[0] != "c2sp.org/tlog-proof@v1" {
		return nil, 0, nil, nil, errors.New("not a c2sp.org/tlog-proof@v1")
	}
	extra, ok := strings.CutPrefix(lines[1], "extra ")
	if tag, err = base64.StdEncoding.DecodeString(extra); !ok || err != nil || len(tag) != sha256.Size {
		return nil, 0, nil, nil, errors.New("the proof's extra line is not a subject tag")
	}
	i, ok := strings.CutPrefix(lines[2], "index ")
	if index, err = strconv.ParseInt(i, 10, 64); !ok || err != nil {
		return nil, 0, nil, nil, errors.New("the proof has no index")
	}
	for _, l := range lines[3:] {
		h, err := base64.StdEncoding.DecodeString(l)
		if err != nil || len(h) != tlog.HashSize {
			return nil, 0, nil, nil, fmt.Errorf("proof hash %q", l)
		}
		hashes = append(hashes, tlog.Hash(h))
	}
	return tag, index, hashes, []byte(checkpointText), nil
}

// openCheckpoint checks a signed checkpoint's signature and reads its size and root.
func openCheckpoint(signed []byte, verifier note.Verifier) (tlog.Tree, error) {
	n, err := note.Open(signed, note.VerifierList(verifier))
	if err != nil {
		return tlog.Tree{}, fmt.Errorf("checkpoint signature: %w", err)
	}
	lines := strings.SplitN(n.Text, "\n", 4)
	if len(lines) < 4 || lines[0] != verifier.Name() {
		return tlog.Tree{}, errors.New("checkpoint: not the log's origin, size and root")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	root, err2 := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || err2 != nil || len(root) != tlog.HashSize || size < 0 {
		return tlog.Tree{}, errors.New("checkpoint: bad size or root")
	}
	return tlog.Tree{N: size, Hash: tlog.Hash(root)}, nil
}

// eventHash is SHA-256 of the event's documented bytes (docs/compliance.md): a label, an empty
// field, then its fields, each text after its length (4 bytes), numbers as 8 bytes, big-endian.
func eventHash(e event) []byte {
	text := func(b []byte, s string) []byte {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		return append(b, s...)
	}
	b := text(nil, "backoffice audit leaf event v1")
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Seq))
	b = text(b, e.ChainKeyID)
	b = text(b, e.ID)
	b = binary.BigEndian.AppendUint64(b, uint64(e.At.UnixMicro()))
	for _, f := range []string{e.ActorUserID, e.Action, e.TargetID, e.Outcome, e.Detail} {
		b = text(b, f)
	}
	h := sha256.Sum256(b)
	return h[:]
}

// checkTiles reads the tree through its tiles (c2sp.org/tlog-tiles): tlog checks every tile it
// reads against the checkpoint, the entry bundle must hold the leaf, and the newest checkpoint
// must be consistent with the proof's.
func checkTiles(url, credential string, verifier note.Verifier, tree tlog.Tree, index int64, leaf []byte) error {
	tiles := &tileClient{url: url, credential: credential}
	reader := tlog.TileHashReader(tree, tiles)
	if root, err := tlog.TreeHash(tree.N, reader); err != nil || root != tree.Hash {
		return fmt.Errorf("tiles: the tree's root from its tiles: %v", err)
	}
	if _, err := tlog.ProveRecord(tree.N, index, reader); err != nil {
		return fmt.Errorf("tiles: %w", err)
	}
	width := min(tree.N-index/256*256, 256)
	bundle, err := tiles.get(tilePath(-1, index/256, int(width)))
	if err != nil {
		return err
	}
	if err := checkBundle(bundle, tlog.Tile{H: 8, L: 0, N: index / 256, W: int(width)}, reader); err != nil {
		return err
	}
	entry, err := entryAt(bundle, int(index%256))
	if err != nil || !bytes.Equal(entry, leaf) {
		return fmt.Errorf("entry bundle: leaf %d is not the event's (%v)", index, err)
	}
	latest, err := tiles.get("checkpoint")
	if err != nil {
		return err
	}
	newest, err := openCheckpoint(latest, verifier)
	if err != nil {
		return fmt.Errorf("newest %w", err)
	}
	if newest.N < tree.N {
		return fmt.Errorf("the newest checkpoint (%d) is older than the proof's (%d)", newest.N, tree.N)
	}
	p, err := tlog.ProveTree(newest.N, tree.N, tlog.TileHashReader(newest, tiles))
	if err != nil {
		return fmt.Errorf("consistency from tiles: %w", err)
	}
	if err := tlog.CheckTree(p, newest.N, newest.Hash, tree.N, tree.Hash); err != nil {
		return fmt.Errorf("the newest checkpoint is not consistent with the proof's: %w", err)
	}
	return nil
}

// checkBundle checks every entry of a bundle against its hash in the level 0 tile, read through
// the checked reader.
func checkBundle(bundle []byte, tile tlog.Tile, reader tlog.HashReader) error {
	hashes, err := tlog.ReadTileData(tile, reader)
	if err != nil {
		return fmt.Errorf("level 0 tile: %w", err)
	}
	for i := range tile.W {
		entry, err := entryAt(bundle, i)
		if err != nil {
			return fmt.Errorf("entry bundle: entry %d: %w", i, err)
		}
		h := tlog.RecordHash(entry)
		if !bytes.Equal(h[:], hashes[i*tlog.HashSize:(i+1)*tlog.HashSize]) {
			return fmt.Errorf("entry bundle: entry %d is not the tree's", tile.N*256+int64(i))
		}
	}
	if _, err := entryAt(bundle, tile.W); err == nil {
		return errors.New("entry bundle: more entries than the tile")
	}
	return nil
}

// entryAt reads entry i of a bundle: each entry after its length, a big-endian uint16.
func entryAt(bundle []byte, i int) ([]byte, error) {
	for ; len(bundle) >= 2; i-- {
		n := int(binary.BigEndian.Uint16(bundle))
		if len(bundle) < 2+n {
			return nil, errors.New("truncated entry")
		}
		if i == 0 {
			return bundle[2 : 2+n], nil
		}
		bundle = bundle[2+n:]
	}
	return nil, errors.New("no such entry")
}

// tilePath is a c2sp.org/tlog-tiles path: level (-1 for entries), the index in groups of three
// digits, all but the last prefixed with x, and .p/<width> for a partial tile.
func tilePath(level int, n int64, width int) string {
	s := strconv.FormatInt(n, 10)
	s = strings.Repeat("0", (3-len(s)%3)%3) + s
	var groups []string
	for i := 0; i < len(s); i += 3 {
		groups = append(groups, s[i:i+3])
	}
	p := strings.Join(groups, "/x")
	if len(groups) > 1 {
		p = "x" + p
	}
	l := "entries"
	if level >= 0 {
		l = strconv.Itoa(level)
	}
	p = "tile/" + l + "/" + p
	if width < 256 {
		p += ".p/" + strconv.Itoa(width)
	}
	return p
}

// tileClient reads tiles over HTTP for tlog.TileHashReader.
type tileClient struct {
	url, credential string
}

func (c *tileClient) Height() int { return 8 }

func (c *tileClient) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := c.get(tilePath(t.L, t.N, t.W))
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func (c *tileClient) SaveTiles([]tlog.Tile, [][]byte) {}

func (c *tileClient) get(path string) ([]byte, error) {
	req, err := http.NewRequest(http.MethodGet, c.url+"/v1/audit-log/"+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", c.credential)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, res.Status)
	}
	return b, nil
}
