// Command auditcheck checks a proof of the backoffice audit trail with nothing of backoffice: the
// standard library and golang.org/x/mod's sumdb/note and sumdb/tlog (and, for witnesses,
// github.com/transparency-dev/formats). Given the log's verifier key
// (note form, `backoffice audit public-key --note`) and a proof file (the answer of
// GET /v1/audit-events/{id}/proof, or `backoffice audit prove`), it checks each proof's
// checkpoint signature, recomputes the event's leaf from the event, and checks its inclusion.
// Given the service's URL and a credential too, it reads the tiles: the hashes it reads must
// rebuild the checkpoint's root, the entry bundle must hold the leaf, and the newest checkpoint
// must be consistent with the proof's.
//
// With -complete, the proof file is one subject's history (`backoffice audit prove --target-id`):
// it reads every entry bundle of the checkpoint's tree, each checked against its level 0 tile,
// and the events in the file must be exactly the leaves that carry one of the subject's tags.
// -tiles DIR reads the tiles from a directory instead of the service (as -save DIR wrote them).
//
// With -policy FILE, a witness policy (c2sp.org/tlog-policy, read by transparency-dev's formats),
// every checkpoint must also carry the cosignatures of the policy's quorum, and the program says
// which witnesses cosigned it.
//
//	go run ./docs/examples/auditcheck -key KEY -proof event.json [-url https://backoffice.example -credential 'Api-Key ...']
//	go run ./docs/examples/auditcheck -key KEY -proof subject.json -complete (-url URL -credential C [-save DIR] | -tiles DIR)
//
// With -archive FILE, the archive `backoffice audit prune` wrote of the events it pruned (a zip of
// the newest checkpoint, the hash tiles and events.jsonl): the checkpoint's signature, the tiles
// rebuilding its root, and every event's leaf (its tag and the event's hash) the tree's at its
// index, the events numbered without a gap. With -pruned FILE, the prune notes beside the
// checkpoints (`FILE.pruned`): the newest note's signature, and it says "pruned by policy below N";
// given with -archive, the archive must be the one that note names (its SHA-256) and end at N-1;
// given with -complete, the history is checked from the first entry bundle with no pruned leaf.
// After a key rotation the newest note is signed anew under the new key while an archive's
// checkpoint stays under the old: give the new one as -pruned-key.
//
//	go run ./docs/examples/auditcheck -key KEY -archive audit-2025.zip [-pruned checkpoints.pruned [-pruned-key NEWKEY]]
//	go run ./docs/examples/auditcheck -key KEY -proof event.json -pruned checkpoints.pruned
//
// It exits 0 when every check passed, 1 when one failed or could not decide, 2 on bad usage.
package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/transparency-dev/formats/witness"
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

// proofFile is one proof, or a subject's proofs: with its tags and checkpoint, its history.
type proofFile struct {
	eventProof
	Proofs     []eventProof `json:"proofs"`
	TargetID   string       `json:"targetId"`
	Checkpoint string       `json:"checkpoint"`
	Tags       []subjectTag `json:"tags"`
}

// subjectTag is the subject's tag under one master key: the first 32 bytes of the leaf of each of
// its events linked under that key.
type subjectTag struct {
	KeyID string `json:"keyId"`
	Tag   []byte `json:"tag"`
}

// options are the command line's.
type options struct {
	key, file, url, credential, tiles, save, policy string
	archive, pruned, prunedKey                      string
	complete                                        bool
}

// witnessed, when a policy is given (-policy), is what every checkpoint must also carry: the
// cosignatures of the policy's quorum. It is set once, before any checkpoint is read.
var witnessed *quorum

// quorum is a witness policy as transparency-dev's formats reads it (the policy format of
// Sigsum and Tessera): its top group, and every witness's verifier by name.
type quorum struct {
	group     witness.Group
	witnesses []note.Verifier
	told      map[string]bool // the checkpoints whose cosigners were printed
}

// readQuorum reads a witness policy file. A quorum of 0 is refused: no cosignature would be
// needed.
func readQuorum(path string) (*quorum, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	g, err := witness.ParsePolicy(b)
	if err != nil {
		return nil, fmt.Errorf("witness policy: %w", err)
	}
	if g.N < 1 {
		return nil, errors.New("witness policy: its quorum needs no cosignature")
	}
	q := &quorum{group: g, told: map[string]bool{}}
	for _, v := range g.Endpoints() {
		q.witnesses = append(q.witnesses, v)
	}
	return q, nil
}

// check fails unless signed carries the quorum's cosignatures, and says once a checkpoint which
// witnesses cosigned it.
func (q *quorum) check(signed []byte) error {
	var by []string
	for _, v := range q.witnesses {
		if _, err := note.Open(signed, note.VerifierList(v)); err == nil {
			by = append(by, v.Name())
		}
	}
	slices.Sort(by)
	if !q.group.Satisfied(signed) {
		return fmt.Errorf("checkpoint: cosigned by %d of the policy's witnesses (%s), short of its quorum", len(by), strings.Join(by, ", "))
	}
	if !q.told[string(signed)] {
		q.told[string(signed)] = true
		fmt.Printf("witnessed: the checkpoint is cosigned by %s: the policy's quorum\n", strings.Join(by, ", "))
	}
	return nil
}

func main() {
	var o options
	flag.StringVar(&o.key, "key", "", "the log's verifier key (note form)")
	flag.StringVar(&o.file, "proof", "", "the proof file (JSON)")
	flag.StringVar(&o.url, "url", "", "the service's URL, to check the tiles too (optional)")
	flag.StringVar(&o.credential, "credential", "", "the Authorization header for -url, e.g. 'Api-Key ...'")
	flag.BoolVar(&o.complete, "complete", false, "check that the proof file holds the subject's every event (needs -url or -tiles)")
	flag.StringVar(&o.tiles, "tiles", "", "read the tiles from this directory instead of -url (as -save wrote them)")
	flag.StringVar(&o.save, "save", "", "with -url, also write every tile read into this directory")
	flag.StringVar(&o.policy, "policy", "", "a witness policy file (c2sp.org/tlog-policy): every checkpoint must carry its quorum of cosignatures")
	flag.StringVar(&o.archive, "archive", "", "check the archive `audit prune` wrote (a zip) instead of a proof")
	flag.StringVar(&o.pruned, "pruned", "", "the prune notes file (the checkpoints file's name and .pruned): report where the trail was pruned, and check -archive is the one named")
	flag.StringVar(&o.prunedKey, "pruned-key", "", "the verifier key the newest prune note is signed under, when not -key's (after a key rotation, the new key)")
	flag.Parse()
	o.url = strings.TrimSuffix(o.url, "/")
	if o.archive != "" && o.key != "" && o.file == "" && o.url == "" && o.tiles == "" && !o.complete {
		if err := runArchive(o); err != nil {
			fmt.Println("FAILED:", err)
			os.Exit(1)
		}
		return
	}
	if o.key == "" || o.file == "" || o.archive != "" || (o.url != "" && o.tiles != "") || (o.save != "" && o.url == "") || (o.complete && o.url == "" && o.tiles == "") {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Println("FAILED:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	verifier, err := note.NewVerifier(o.key)
	if err != nil {
		return fmt.Errorf("verifier key: %w", err)
	}
	if o.policy != "" {
		if witnessed, err = readQuorum(o.policy); err != nil {
			return err
		}
	}
	b, err := os.ReadFile(o.file)
	if err != nil {
		return err
	}
	var f proofFile
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("proof file: %w", err)
	}
	var tiles *tileClient
	if o.url != "" || o.tiles != "" {
		tiles = &tileClient{url: o.url, credential: o.credential, dir: o.tiles, save: o.save, cache: map[string][]byte{}}
	}
	var p prune
	if o.pruned != "" {
		pv, err := prunedVerifier(o, verifier)
		if err != nil {
			return err
		}
		if p, err = checkPruned(pv, o.pruned); err != nil {
			return err
		}
	}
	if o.complete {
		return checkHistory(verifier, f, tiles, p.below)
	}
	proofs := f.Proofs
	if f.Proof != "" {
		proofs = append(proofs, f.eventProof)
	}
	if len(proofs) == 0 {
		return errors.New("the proof file holds no proof")
	}
	for _, p := range proofs {
		if err := check(verifier, p, tiles); err != nil {
			return fmt.Errorf("event %s: %w", p.Event.ID, err)
		}
		fmt.Printf("ok: event %s (seq %d) is in the tree\n", p.Event.ID, p.Event.Seq)
	}
	return nil
}

// proved is what a proof proves: the leaf at index in the tree its signed checkpoint names.
type proved struct {
	leaf   []byte
	index  int64
	tree   tlog.Tree
	signed []byte
}

// check checks one proof, and with tiles the tiles.
func check(verifier note.Verifier, p eventProof, tiles *tileClient) error {
	pr, err := checkProof(verifier, p)
	if err != nil || tiles == nil {
		return err
	}
	return checkTiles(tiles, verifier, pr.tree, pr.index, pr.leaf)
}

// checkProof checks one proof against its checkpoint, offline.
func checkProof(verifier note.Verifier, p eventProof) (proved, error) {
	tag, index, hashes, signed, err := parseProof(p.Proof)
	if err != nil {
		return proved{}, err
	}
	tree, err := openCheckpoint(signed, verifier)
	if err != nil {
		return proved{}, err
	}
	if index != p.Event.Seq-1 {
		return proved{}, fmt.Errorf("proof index %d is not the event's leaf (seq %d)", index, p.Event.Seq)
	}
	leaf := append(tag, eventHash(p.Event)...)
	if err := tlog.CheckRecord(hashes, tree.N, tree.Hash, index, tlog.RecordHash(leaf)); err != nil {
		return proved{}, fmt.Errorf("inclusion: %w", err)
	}
	return proved{leaf: leaf, index: index, tree: tree, signed: signed}, nil
}

// checkHistory checks a subject's history (-complete): every proof against the file's one
// checkpoint, every event about the file's subject with its tag under the event's key (one that
// is not is named by its index), and then, from every entry bundle of the checkpoint's tree, that
// every leaf carrying one of the subject's tags is in the file (one missing is named by its
// index). A tree holding leaves without a tag (events from before the chain, whose subject
// cannot be told) cannot be checked whole, and fails.
//
// On a trail pruned below seq below (-pruned; 0: not pruned), the entry bundles that hold a pruned
// leaf are gone: it checks from the first whole bundle after them, and says from which seq on the
// history is complete.
func checkHistory(verifier note.Verifier, f proofFile, tiles *tileClient, below int64) error {
	tree, err := openCheckpoint([]byte(f.Checkpoint), verifier)
	if err != nil {
		return fmt.Errorf("the history's %w", err)
	}
	tags, err := historyTags(f)
	if err != nil {
		return err
	}
	shown := map[int64]string{}
	for _, p := range f.Proofs {
		index, err := checkHistoryProof(verifier, f, tags, p)
		if err != nil {
			return fmt.Errorf("event %s: %w", p.Event.ID, err)
		}
		if _, dup := shown[index]; dup {
			return fmt.Errorf("event %s: leaf %d is in the file twice", p.Event.ID, index)
		}
		shown[index] = p.Event.ID
		fmt.Printf("ok: event %s (seq %d) is in the tree\n", p.Event.ID, p.Event.Seq)
	}
	first := (below - 1 + 255) / 256 // the first entry bundle with no pruned leaf
	if below <= 1 {
		first = 0
	}
	tagged, untagged, err := scanTags(tiles, tree, tags, first)
	if err != nil {
		return err
	}
	if err := missingLeaves(shown, tagged); err != nil {
		return err
	}
	if untagged.count > 0 {
		return fmt.Errorf("cannot check: %d leaves of the tree (the first: leaf %d) have no subject tag (events from before the chain): whose events they are cannot be told", untagged.count, untagged.first)
	}
	if err := checkNewest(tiles, verifier, tree); err != nil {
		return err
	}
	if first > 0 {
		fmt.Printf("ok: complete from seq %d on (pruned by policy below %d; the entry bundles from seq 1 to %d are gone): the events about %s shown are every leaf from there of the tree of %d with one of its %d tags\n",
			first*256+1, below, first*256, f.TargetID, tree.N, len(f.Tags))
		return nil
	}
	fmt.Printf("ok: complete: the %d events about %s are every leaf of the tree of %d with one of its %d tags\n", len(shown), f.TargetID, tree.N, len(f.Tags))
	return nil
}

// historyTags reads the history's tags, by key id: each 32 bytes, none zero (the tag of no
// subject), at least one.
func historyTags(f proofFile) (map[string][]byte, error) {
	if f.TargetID == "" || f.Checkpoint == "" || len(f.Tags) == 0 {
		return nil, errors.New("the proof file is not a subject's history (targetId, checkpoint and tags: backoffice audit prove --target-id)")
	}
	tags := map[string][]byte{}
	for _, t := range f.Tags {
		if len(t.Tag) != sha256.Size || bytes.Equal(t.Tag, make([]byte, sha256.Size)) {
			return nil, fmt.Errorf("the subject's tag under key %q is not a subject tag", t.KeyID)
		}
		if _, dup := tags[t.KeyID]; dup {
			return nil, fmt.Errorf("key %q has two tags", t.KeyID)
		}
		tags[t.KeyID] = t.Tag
	}
	return tags, nil
}

// checkHistoryProof checks one proof of a history and returns its leaf's index: proved against
// the history's checkpoint, about its subject, and its leaf tagged with the subject's tag under
// the event's key.
func checkHistoryProof(verifier note.Verifier, f proofFile, tags map[string][]byte, p eventProof) (int64, error) {
	pr, err := checkProof(verifier, p)
	if err != nil {
		return 0, err
	}
	switch tag, ok := tags[p.Event.ChainKeyID]; {
	case !bytes.Equal(pr.signed, []byte(f.Checkpoint)):
		return 0, fmt.Errorf("leaf %d: proved against another checkpoint than the history's", pr.index)
	case p.Event.TargetID != f.TargetID:
		return 0, fmt.Errorf("leaf %d: the event is about %s, not %s", pr.index, p.Event.TargetID, f.TargetID)
	case p.Event.ChainKeyID == "":
		return 0, fmt.Errorf("leaf %d: the event has no key (from before the chain): its leaf has no subject tag", pr.index)
	case !ok || !bytes.Equal(pr.leaf[:sha256.Size], tag):
		return 0, fmt.Errorf("leaf %d: its subject tag is not the subject's under key %q", pr.index, p.Event.ChainKeyID)
	}
	return pr.index, nil
}

// untagged counts the leaves with a zero tag.
type untagged struct {
	count, first int64
}

// scanTags reads every entry bundle of the tree from bundle first on, each checked against its
// level 0 tile (itself checked against the checkpoint's root), and returns the indexes of the leaves tagged with one of
// tags, and the leaves with no tag.
func scanTags(tiles *tileClient, tree tlog.Tree, tags map[string][]byte, first int64) ([]int64, untagged, error) {
	reader, err := treeReader(tiles, tree)
	if err != nil {
		return nil, untagged{}, err
	}
	var tagged []int64
	none := untagged{}
	zero := make([]byte, sha256.Size)
	for n := first; n*256 < tree.N; n++ {
		bundle, err := readBundle(tiles, reader, tree, n)
		if err != nil {
			return nil, untagged{}, err
		}
		for i := range min(tree.N-n*256, 256) {
			entry, err := entryAt(bundle, int(i))
			index := n*256 + i
			if err != nil || len(entry) != 2*sha256.Size {
				return nil, untagged{}, fmt.Errorf("entry bundle: leaf %d is not a 64-byte leaf", index)
			}
			if bytes.Equal(entry[:sha256.Size], zero) {
				if none.count == 0 {
					none.first = index
				}
				none.count++
			}
			for _, t := range tags {
				if bytes.Equal(entry[:sha256.Size], t) {
					tagged = append(tagged, index)
					break
				}
			}
		}
	}
	return tagged, none, nil
}

// missingLeaves fails naming each tagged leaf the file does not show. (Each leaf it shows carries
// one of the tags already: checkHistoryProof checked it against the same root.)
func missingLeaves(shown map[int64]string, tagged []int64) error {
	var missing []string
	for _, index := range tagged {
		if _, ok := shown[index]; !ok {
			missing = append(missing, fmt.Sprintf("leaf %d (seq %d)", index, index+1))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("not the subject's complete history: missing from the file, carrying the subject's tag: %s", strings.Join(missing, ", "))
	}
	return nil
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
	if witnessed != nil {
		if err := witnessed.check(signed); err != nil {
			return tlog.Tree{}, err
		}
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
func checkTiles(tiles *tileClient, verifier note.Verifier, tree tlog.Tree, index int64, leaf []byte) error {
	reader, err := treeReader(tiles, tree)
	if err != nil {
		return err
	}
	if _, err := tlog.ProveRecord(tree.N, index, reader); err != nil {
		return fmt.Errorf("tiles: %w", err)
	}
	bundle, err := readBundle(tiles, reader, tree, index/256)
	if err != nil {
		return err
	}
	entry, err := entryAt(bundle, int(index%256))
	if err != nil || !bytes.Equal(entry, leaf) {
		return fmt.Errorf("entry bundle: leaf %d is not the event's (%v)", index, err)
	}
	return checkNewest(tiles, verifier, tree)
}

// treeReader reads the tree's hashes from its tiles, each checked against the checkpoint's root
// (tlog.TileHashReader), once it has rebuilt that root from them.
func treeReader(tiles *tileClient, tree tlog.Tree) (tlog.HashReader, error) {
	reader := tlog.TileHashReader(tree, tiles)
	if root, err := tlog.TreeHash(tree.N, reader); err != nil || root != tree.Hash {
		return nil, fmt.Errorf("tiles: the tree's root from its tiles: %v", err)
	}
	return reader, nil
}

// readBundle reads entry bundle n of the tree, checked against its level 0 tile.
func readBundle(tiles *tileClient, reader tlog.HashReader, tree tlog.Tree, n int64) ([]byte, error) {
	width := int(min(tree.N-n*256, 256))
	bundle, err := tiles.get(tilePath(-1, n, width))
	if err != nil {
		return nil, err
	}
	if err := checkBundle(bundle, tlog.Tile{H: 8, L: 0, N: n, W: width}, reader); err != nil {
		return nil, err
	}
	return bundle, nil
}

// checkNewest checks that the service's newest checkpoint is consistent with tree (no fork).
func checkNewest(tiles *tileClient, verifier note.Verifier, tree tlog.Tree) error {
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

// tileClient reads tiles over HTTP, or from a directory, for tlog.TileHashReader.
type tileClient struct {
	url, credential string
	dir             string               // read here instead of url
	zip             map[string]*zip.File // read from this archive instead of url
	save            string               // write what is read here too
	cache           map[string][]byte    // tiles above level 0, read again for each bundle's check
}

func (c *tileClient) Height() int { return 8 }

func (c *tileClient) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		path := tilePath(t.L, t.N, t.W)
		if b, ok := c.cache[path]; ok {
			out[i] = b
			continue
		}
		b, err := c.get(path)
		if err != nil {
			return nil, err
		}
		if t.L > 0 {
			c.cache[path] = b
		}
		out[i] = b
	}
	return out, nil
}

func (c *tileClient) SaveTiles([]tlog.Tile, [][]byte) {}

// get reads path (relative to /v1/audit-log/) and, with save, keeps a copy under the same path.
func (c *tileClient) get(path string) ([]byte, error) {
	var b []byte
	var err error
	switch {
	case c.zip != nil:
		b, err = readZip(c.zip, path)
	case c.dir != "":
		b, err = os.ReadFile(filepath.Join(c.dir, filepath.FromSlash(path)))
	default:
		b, err = c.fetch(path)
	}
	if err != nil || c.save == "" {
		return b, err
	}
	name := filepath.Join(c.save, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return nil, err
	}
	return b, os.WriteFile(name, b, 0o644)
}

func (c *tileClient) fetch(path string) ([]byte, error) {
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
	b, err := readBounded(res.Body, "GET "+path)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, res.Status)
	}
	return b, nil
}

// prune is the newest prune note of a notes file, as checked.
type prune struct {
	below   int64
	archive []byte
}

// checkPruned reads the prune notes file at path (notes one after another, each ending with its
// signature lines and a blank line), checks the newest one's signature, and says where the trail
// was pruned. The note's text is documented in docs/compliance.md ("Retention").
func checkPruned(verifier note.Verifier, path string) (prune, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return prune{}, err
	}
	// The newest note starts at the origin line before the file's last label line.
	text := string(b)
	label := strings.LastIndex(text, "\nbackoffice audit prune v1\n")
	if label < 0 {
		return prune{}, fmt.Errorf("%s holds no prune note", path)
	}
	last := strings.TrimRight(text[strings.LastIndex(text[:label], "\n")+1:], "\n") + "\n"
	n, err := note.Open([]byte(last), note.VerifierList(verifier))
	if err != nil {
		return prune{}, fmt.Errorf("the newest prune note's signature: %w", err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) != 8 || lines[0] != verifier.Name() || lines[1] != "backoffice audit prune v1" {
		return prune{}, errors.New("the newest prune note is not the log's prune note")
	}
	below, err1 := strconv.ParseInt(strings.TrimPrefix(lines[2], "below "), 10, 64)
	sum, err2 := hex.DecodeString(strings.TrimPrefix(lines[5], "archive "))
	if err1 != nil || err2 != nil || len(sum) != sha256.Size {
		return prune{}, errors.New("the newest prune note: malformed")
	}
	fmt.Printf("pruned by policy below %d: events 1 to %d were archived; the newest prune's archive (sha256 %x) holds those after any earlier prune, as the log's key signed (%s)\n", below, below-1, sum, strings.TrimPrefix(lines[6], "signed "))
	return prune{below: below, archive: sum}, nil
}

// archived is a line of an archive's events.jsonl: the event, and its leaf's subject tag.
type archived struct {
	Event event  `json:"event"`
	Tag   []byte `json:"tag"`
}

// prunedVerifier is the verifier of the prune notes: -pruned-key's, else -key's (v). A rotation
// signs the newest prune's note anew under the new key, while the archive's checkpoint stays
// under the key that signed it when the prune ran.
func prunedVerifier(o options, v note.Verifier) (note.Verifier, error) {
	if o.prunedKey == "" {
		return v, nil
	}
	pv, err := note.NewVerifier(o.prunedKey)
	if err != nil {
		return nil, fmt.Errorf("-pruned-key: %w", err)
	}
	return pv, nil
}

// runArchive checks the archive at o.archive (-archive), and with -pruned that it is the one the
// newest prune note names.
func runArchive(o options) error {
	verifier, err := note.NewVerifier(o.key)
	if err != nil {
		return fmt.Errorf("verifier key: %w", err)
	}
	// Read from the file, never whole: an archive of years holds millions of events.
	f, err := os.Open(o.archive)
	if err != nil {
		return err
	}
	defer f.Close()
	var p prune
	if o.pruned != "" {
		pv, err := prunedVerifier(o, verifier)
		if err != nil {
			return err
		}
		if p, err = checkPruned(pv, o.pruned); err != nil {
			return err
		}
		sum, err := fileSHA256(f)
		if err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		if !bytes.Equal(sum, p.archive) {
			return fmt.Errorf("the archive's SHA-256 is %x, not the %x the newest prune note names", sum, p.archive)
		}
	}
	info, err := f.Stat()
	if err != nil {
		return err
	}
	z, err := zip.NewReader(f, info.Size())
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	tiles := &tileClient{zip: map[string]*zip.File{}, cache: map[string][]byte{}}
	for _, f := range z.File {
		tiles.zip[f.Name] = f
	}
	signed, err := tiles.get("checkpoint")
	if err != nil {
		return err
	}
	tree, err := openCheckpoint(signed, verifier)
	if err != nil {
		return fmt.Errorf("the archive's %w", err)
	}
	reader, err := treeReader(tiles, tree)
	if err != nil {
		return err
	}
	ef, ok := tiles.zip["events.jsonl"]
	if !ok {
		return errors.New("events.jsonl is not in the archive")
	}
	events, err := ef.Open() // read as it streams: an archive may hold millions of events
	if err != nil {
		return err
	}
	defer events.Close()
	lines := bufio.NewScanner(events)
	lines.Buffer(make([]byte, 0, 64<<10), maxObject) // a longer line is refused, not held
	var first, next int64
	var level0 []byte
	tile := int64(-1)
	for lines.Scan() {
		var a archived
		if err := json.Unmarshal(lines.Bytes(), &a); err != nil {
			return fmt.Errorf("events.jsonl: line %d: %w", next-first+1, err)
		}
		if next == 0 {
			first, next = a.Event.Seq, a.Event.Seq
		}
		if a.Event.Seq != next || next < 1 || next > tree.N {
			return fmt.Errorf("events.jsonl: seq %d where seq %d was due (the checkpoint's tree has %d)", a.Event.Seq, next, tree.N)
		}
		index := next - 1
		if index/256 != tile {
			tile = index / 256
			if level0, err = tlog.ReadTileData(tlog.Tile{H: 8, L: 0, N: tile, W: int(min(tree.N-tile*256, 256))}, reader); err != nil {
				return fmt.Errorf("level 0 tile: %w", err)
			}
		}
		if len(a.Tag) != sha256.Size {
			return fmt.Errorf("events.jsonl: seq %d: a tag is 32 bytes", next)
		}
		h := tlog.RecordHash(append(bytes.Clone(a.Tag), eventHash(a.Event)...))
		at := index % 256 * tlog.HashSize
		if !bytes.Equal(h[:], level0[at:at+tlog.HashSize]) {
			return fmt.Errorf("events.jsonl: event %s (seq %d) is not its leaf in the tree: altered", a.Event.ID, next)
		}
		next++
	}
	if err := lines.Err(); err != nil {
		return fmt.Errorf("events.jsonl: after seq %d: %w", next-1, err)
	}
	if next == 0 {
		return errors.New("events.jsonl holds no event")
	}
	if p.below != 0 && next != p.below {
		return fmt.Errorf("the archive ends at seq %d, and the prune note is below %d", next-1, p.below)
	}
	fmt.Printf("ok: archive: events seq %d-%d (%d) are the leaves of the tree of %d the checkpoint signed\n", first, next-1, next-first, tree.N)
	return nil
}

// maxObject bounds what is read whole: a tile, a checkpoint, an answer of the service, a line of
// events.jsonl. Each is far smaller; a larger one (a compressed file that inflates without end,
// say) is refused rather than read into memory.
const maxObject = 1 << 20

// readZip reads the archive's file named path, refusing one larger than maxObject.
func readZip(files map[string]*zip.File, path string) ([]byte, error) {
	f, ok := files[path]
	if !ok {
		return nil, fmt.Errorf("%s is not in the archive", path)
	}
	r, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return readBounded(r, path+" in the archive")
}

// readBounded reads r whole, refusing more than maxObject bytes: what names it in the error.
func readBounded(r io.Reader, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxObject+1))
	if err == nil && len(b) > maxObject {
		err = fmt.Errorf("%s is larger than %d bytes: not a tile, a checkpoint or an answer of the service", what, maxObject)
	}
	return b, err
}

// fileSHA256 is the SHA-256 of f's content, read from its start.
func fileSHA256(f *os.File) ([]byte, error) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, 1<<62)); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}
