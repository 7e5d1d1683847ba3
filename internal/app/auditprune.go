package app

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"backoffice/internal/auditlog"
	"backoffice/internal/checkpoint"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/trail"
)

// errPruneRefused marks a prune refused: nothing was archived or removed (exit status 1).
var errPruneRefused = errors.New("audit prune refused, nothing was removed")

// refusePrune is a refusal saying why.
func refusePrune(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errPruneRefused, fmt.Sprintf(format, args...))
}

// The archive's files: the paths of c2sp.org/tlog-tiles below the log's prefix (as served under
// /v1/audit-log/), and the pruned events themselves, one JSON object per line as the API shows
// them, which an auditor hashes to the leaves of the entry bundles.
const (
	archiveCheckpoint = "checkpoint"
	archiveEvents     = "events.jsonl"
)

// prunedNotesSuffix names the file beside the checkpoints file that prune appends its signed
// notes to, so that whoever holds the checkpoints holds the prunes too.
const prunedNotesSuffix = ".pruned"

// runAuditPrune archives the events below a seq (or a time) into one file, then removes them from
// the trail in one transaction with a signed prune note; see docs/compliance.md, "Retention".
func runAuditPrune(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("audit prune")
	cfg.databaseFlags(fs)
	before := fs.String("before", "", "prune the events below this `SEQ`, or before this RFC 3339 time (the first event at or after it is kept)")
	archive := fs.String("archive", "", "write the pruned events, their tiles and the newest checkpoint to this new `FILE` (a zip) first")
	if err := cfg.parseNoArgs(fs, args); err != nil {
		return err
	}
	if *before == "" {
		return usagef("--before: give the first seq to keep, or an RFC 3339 time")
	}
	if *archive == "" {
		return usagef("--archive: the pruned events are archived to a file first; a prune without an archive is refused")
	}
	seq, at, err := parseBefore(*before)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(*archive); err == nil {
		return refusePrune("--archive: %s exists: an archive is never overwritten", *archive)
	}
	ring, err := masterRing(cfg)
	if err != nil {
		return err
	}
	keys, err := ringPublicKeys(ring)
	if err != nil {
		return err
	}
	newest, expects, vouched, err := pruneCheckpoints(cfg, keys)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, cfg, ring)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.CheckTrailCatalog(ctx); err != nil {
		return refusePrune("%v", err)
	}
	below := seq
	if below == 0 {
		if below, err = st.AuditSeqAt(ctx, at); err != nil {
			return err
		}
		if below == 0 {
			return refusePrune("no event at or after %s: a prune keeps at least one event", at.Format(time.RFC3339))
		}
	}
	if below > newest.Seq {
		return refusePrune("seq %d is beyond the newest signed checkpoint (%s, size %d): events no checkpoint covers are never pruned", below, newest.What(), newest.Seq)
	}
	if err := checkTrees(ctx, st, vouched); err != nil {
		return refusePrune("the audit tree does not extend the checkpoints: %v", err)
	}
	plan, rep, err := st.PlanAuditPrune(ctx, ring, below, expects)
	nothing := errors.Is(err, auditlog.ErrNothingToPrune)
	if err != nil && !nothing {
		return err
	}
	// The walk's verdict first: "nothing to prune" over a broken trail would hide the break.
	if _, err := rep.Verified(); err != nil {
		return refusePrune("the trail does not verify, and only a verified trail is archived and pruned: %v", err)
	}
	if nothing {
		fmt.Fprintf(env.Stdout, "nothing to prune: the trail starts at seq %d, at or after seq %d\n", plan.From, below)
		return nil
	}
	now := time.Now()
	if cutoff := cfg.AuditRetention.Cutoff(now); !plan.NewestPruned.Before(cutoff) {
		return refusePrune("the events below seq %d include one of %s, within the retention policy (BACKOFFICE_AUDIT_RETENTION %s: only events before %s may be pruned)",
			below, plan.NewestPruned.Format(time.RFC3339), cfg.AuditRetention, cutoff.Format(time.RFC3339))
	}
	sum, err := writePruneArchive(ctx, st, *archive, newest, plan, keys)
	if err != nil {
		return fmt.Errorf("audit prune: the archive (nothing was removed): %w", err)
	}
	keyID := ring.ActiveKeyID()
	key, err := ring.CheckpointKey(keyID)
	if err != nil {
		return err
	}
	p, err := checkpoint.SignPrune(checkpoint.Prune{Origin: cfg.AuditOrigin, Below: plan.Below, Root: plan.Root, Link: plan.Link,
		Digest: plan.Digest, Archive: sum, KeyID: keyID}, now, key)
	if err != nil {
		return err
	}
	// The note goes beside the checkpoints before the events go: a note whose prune did not
	// happen (a crash in between) names events the trail still holds, which harms nothing.
	notes := cfg.AuditCheckpoints + prunedNotesSuffix
	if err := appendSynced(notes, p.Note); err != nil {
		return fmt.Errorf("audit prune: %s (nothing was removed): %w", notes, err)
	}
	if err := st.PruneAudit(ctx, plan, p); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "pruned by policy below seq %d: events %s archived to %s (sha256 %s); the trail starts at seq %d\n",
		plan.Below, seqRange(plan.From, plan.Below-1), *archive, hex.EncodeToString(sum[:]), plan.Below)
	fmt.Fprintf(env.Stdout, "prune note: appended to %s\n", notes)
	return nil
}

// parseBefore reads --before: a seq (the first event kept, 1 or more), or an RFC 3339 time.
func parseBefore(v string) (seq int64, at time.Time, err error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 1 {
			return 0, at, usagef("--before: a seq is 1 or more")
		}
		return n, at, nil
	}
	at, err = time.Parse(time.RFC3339, v)
	if err != nil {
		return 0, at, usagef("--before: %q is neither a seq nor an RFC 3339 time", v)
	}
	return 0, at, nil
}

// pruneCheckpoints reads the configured checkpoints file, which a prune needs: every checkpoint
// in it signed under a key of the ring (else refused), and the newest a signed note, which bounds
// what may be pruned and goes into the archive.
func pruneCheckpoints(cfg Config, keys map[string]ed25519.PublicKey) (newest checkpoint.Entry, expects []auditlog.ChainExpect, vouched [][]checkpoint.Entry, err error) {
	if cfg.AuditCheckpoints == "" {
		return newest, nil, nil, refusePrune("BACKOFFICE_AUDIT_CHECKPOINTS is not set: only events a signed checkpoint covers are pruned, and the archive holds it")
	}
	expects, _, unvouched, vouched, err := checkpointExpects([]string{cfg.AuditCheckpoints}, keys, false)
	if err != nil {
		return newest, nil, nil, refusePrune("%v", err)
	}
	if len(unvouched) > 0 {
		return newest, nil, nil, refusePrune("%s", unvouchedNote(cfg.AuditCheckpoints, unvouched))
	}
	entries := vouched[0]
	if len(entries) == 0 || !entries[len(entries)-1].IsNote() {
		return newest, nil, nil, refusePrune("%s holds no signed checkpoint note yet: serve signs them", cfg.AuditCheckpoints)
	}
	return entries[len(entries)-1], expects, vouched, nil
}

// pruneSource is what the archive reads of the store (*store.Store is one).
type pruneSource interface {
	AuditHashReader(ctx context.Context) tlog.HashReader
	AuditLeaves(ctx context.Context, start, end int64) ([][]byte, error)
	AuditEventsBetween(ctx context.Context, from, to int64, fn func(domain.AuditEvent) error) error
}

var _ pruneSource = (*store.Store)(nil)

// writePruneArchive writes the archive of the events plan prunes at path: the newest checkpoint
// (the signed note of size S), every hash tile an auditor reads to check the entry bundles under
// it, the entry bundles of the pruned leaves (at S's widths), and the events. It writes a
// temporary file beside path, syncs it, links it to path and syncs the folder, then reads the file
// back and checks it as an auditor would (checkPruneArchive), and returns its SHA-256; on any
// failure nothing is left at path.
func writePruneArchive(ctx context.Context, st pruneSource, path string, newest checkpoint.Entry, plan auditlog.PrunePlan, keys map[string]ed25519.PublicKey) (sum [sha256.Size]byte, err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return sum, err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	z := zip.NewWriter(tmp)
	if err := writeArchiveEntries(ctx, z, st, newest, plan); err != nil {
		return sum, err
	}
	if err := z.Close(); err != nil {
		return sum, err
	}
	if err := tmp.Sync(); err != nil {
		return sum, err
	}
	if err := tmp.Close(); err != nil {
		return sum, err
	}
	// A link, not a rename: it fails where path exists, however it came to, so an archive is
	// never overwritten (a check before a rename would leave a window for another writer).
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return sum, fmt.Errorf("%s exists: an archive is never overwritten", path)
		}
		return sum, err
	}
	// From here path is this archive's: one that fails its checks goes, as nothing is pruned, so
	// that a second try is not refused for the file the first left.
	defer func() {
		if err != nil {
			os.Remove(path)
		}
	}()
	if err := os.Remove(tmp.Name()); err != nil {
		return sum, err
	}
	if err := syncDir(dir); err != nil {
		return sum, fmt.Errorf("%s: %w", dir, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return sum, err
	}
	if _, err := checkPruneArchive(f, info.Size(), keys, plan.From, plan.Below); err != nil {
		return sum, fmt.Errorf("%s does not check as written: %w", path, err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, info.Size())); err != nil {
		return sum, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// tileRecorder reads hash tiles from the store's stored hashes, keeping each one read: the
// archive holds exactly what an auditor's reads need.
type tileRecorder struct {
	hashes tlog.HashReader
	read   map[string][]byte
}

func (r *tileRecorder) Height() int { return trail.TileHeight }

func (r *tileRecorder) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := tlog.ReadTileData(t, r.hashes)
		if err != nil {
			return nil, err
		}
		r.read["tile/"+trail.TilePath(t)], out[i] = b, b
	}
	return out, nil
}

func (r *tileRecorder) SaveTiles([]tlog.Tile, [][]byte) {}

// archivedEvent is a line of the archive's events: the event as the API shows it, and its leaf's
// subject tag (32 zero bytes for an event from before the chain), which make its leaf.
type archivedEvent struct {
	Event domain.AuditEvent `json:"event"`
	Tag   []byte            `json:"tag"`
}

// writeArchiveEntries writes the archive's files into z: the checkpoint, the hash tiles its root
// and the pruned leaves' level 0 tiles are read from, and the events with their tags.
func writeArchiveEntries(ctx context.Context, z *zip.Writer, st pruneSource, newest checkpoint.Entry, plan auditlog.PrunePlan) error {
	tree := tlog.Tree{N: newest.Seq, Hash: newest.Root}
	rec := &tileRecorder{hashes: st.AuditHashReader(ctx), read: map[string][]byte{}}
	reader := tlog.TileHashReader(tree, rec)
	if root, err := tlog.TreeHash(tree.N, reader); err != nil || root != tree.Hash {
		return fmt.Errorf("the audit tree's tiles do not make the newest checkpoint's root (%v)", err)
	}
	for n := trail.Index(plan.From) / trail.TileWidth; n <= trail.Index(plan.Below-1)/trail.TileWidth; n++ {
		if _, err := tlog.ReadTileData(levelZero(tree, n), reader); err != nil {
			return err
		}
	}
	if err := zipFile(z, archiveCheckpoint, newest.Note); err != nil {
		return err
	}
	for name, b := range rec.read {
		if err := zipFile(z, name, b); err != nil {
			return err
		}
	}
	w, err := z.Create(archiveEvents)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	var leaves [][]byte
	var first int64 // the seq of leaves[0]
	err = st.AuditEventsBetween(ctx, plan.From, plan.Below, func(e domain.AuditEvent) error {
		if e.Seq-first >= int64(len(leaves)) {
			first = e.Seq
			var err error
			if leaves, err = st.AuditLeaves(ctx, trail.Index(e.Seq), min(trail.Index(e.Seq)+trail.TileWidth, trail.Index(plan.Below))); err != nil {
				return err
			}
		}
		leaf := leaves[e.Seq-first]
		h := trail.EventHash(e)
		if len(leaf) != trail.LeafSize || !bytes.Equal(leaf[trail.TagSize:], h[:]) {
			return fmt.Errorf("event seq %d is not its leaf", e.Seq)
		}
		return enc.Encode(archivedEvent{Event: e, Tag: leaf[:trail.TagSize]})
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

// levelZero is the level 0 tile n of tree, at its width there.
func levelZero(tree tlog.Tree, n int64) tlog.Tile {
	return tlog.Tile{H: trail.TileHeight, L: 0, N: n, W: int(min(tree.N-n*trail.TileWidth, trail.TileWidth))}
}

func zipFile(z *zip.Writer, name string, b []byte) error {
	w, err := z.Create(name)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// archiveTiles reads tiles from an archive's files (tlog.TileReader).
type archiveTiles map[string]*zip.File

func (a archiveTiles) Height() int { return trail.TileHeight }

func (a archiveTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := a.read("tile/" + trail.TilePath(t))
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func (a archiveTiles) SaveTiles([]tlog.Tile, [][]byte) {}

func (a archiveTiles) read(name string) ([]byte, error) {
	f, ok := a[name]
	if !ok {
		return nil, fmt.Errorf("%s is not in the archive", name)
	}
	r, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(io.LimitReader(r, 1<<20))
}

// checkPruneArchive checks an archive as an auditor does: its checkpoint signed under one of
// keys, the tiles making its root, and each event's leaf (its tag and its hash) the tree's at its
// index, the events numbered from..below-1 without a gap. It returns how many events it checked.
func checkPruneArchive(archive io.ReaderAt, size int64, keys map[string]ed25519.PublicKey, from, below int64) (int64, error) {
	z, err := zip.NewReader(archive, size)
	if err != nil {
		return 0, err
	}
	files := archiveTiles{}
	for _, f := range z.File {
		files[f.Name] = f
	}
	signed, err := files.read(archiveCheckpoint)
	if err != nil {
		return 0, err
	}
	tree, err := openArchiveCheckpoint(signed, keys)
	if err != nil {
		return 0, err
	}
	reader := tlog.TileHashReader(tree, files)
	if root, err := tlog.TreeHash(tree.N, reader); err != nil || root != tree.Hash {
		return 0, fmt.Errorf("the tiles do not make the checkpoint's root (%v)", err)
	}
	f, ok := files[archiveEvents]
	if !ok {
		return 0, fmt.Errorf("%s is not in the archive", archiveEvents)
	}
	r, err := f.Open()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	dec := json.NewDecoder(r)
	var hashes []byte // the level 0 tile of the events being read
	tile := int64(-1)
	next := from
	for ; ; next++ {
		var line archivedEvent
		if err := dec.Decode(&line); err == io.EOF {
			break
		} else if err != nil {
			return 0, fmt.Errorf("%s: %w", archiveEvents, err)
		}
		e := line.Event
		if e.Seq != next || next >= below || next > tree.N {
			return 0, fmt.Errorf("%s: seq %d where seq %d was due", archiveEvents, e.Seq, next)
		}
		index := trail.Index(e.Seq)
		if n := index / trail.TileWidth; n != tile {
			if hashes, err = tlog.ReadTileData(levelZero(tree, n), reader); err != nil {
				return 0, err
			}
			tile = n
		}
		h := trail.LeafHash(trail.Leaf(line.Tag, e))
		at := index % trail.TileWidth * tlog.HashSize
		if len(line.Tag) != trail.TagSize || !bytes.Equal(h[:], hashes[at:at+tlog.HashSize]) {
			return 0, fmt.Errorf("%s: event seq %d (%s) is not its leaf in the tree: altered", archiveEvents, e.Seq, e.ID)
		}
	}
	if next != below {
		return 0, fmt.Errorf("%s: ends at seq %d, the prune is below %d", archiveEvents, next-1, below)
	}
	return below - from, nil
}

// openArchiveCheckpoint checks the archive's checkpoint under keys and reads its tree.
func openArchiveCheckpoint(signed []byte, keys map[string]ed25519.PublicKey) (tlog.Tree, error) {
	origin, _, _ := strings.Cut(string(signed), "\n")
	var vs []note.Verifier
	for _, pub := range keys {
		if v, err := checkpoint.Verifier(origin, pub); err == nil {
			vs = append(vs, v)
		}
	}
	n, err := note.Open(signed, note.VerifierList(vs...))
	if err != nil {
		return tlog.Tree{}, fmt.Errorf("the archive's checkpoint: %w", err)
	}
	lines := strings.SplitN(n.Text, "\n", 4)
	if len(lines) < 4 {
		return tlog.Tree{}, errors.New("the archive's checkpoint: not a checkpoint")
	}
	size, err1 := strconv.ParseInt(lines[1], 10, 64)
	root, err2 := base64.StdEncoding.DecodeString(lines[2])
	if err1 != nil || err2 != nil || len(root) != tlog.HashSize || size < 1 {
		return tlog.Tree{}, errors.New("the archive's checkpoint: bad size or root")
	}
	return tlog.Tree{N: size, Hash: tlog.Hash(root)}, nil
}

// appendSynced appends note to the file at path (made if missing), a blank line after it, and
// syncs it.
func appendSynced(path string, b []byte) error {
	_, err := os.Lstat(path)
	created := errors.Is(err, fs.ErrNotExist)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(bytes.Clone(b), '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if created { // the file's name is durable only once its folder is synced
		return syncDir(filepath.Dir(path))
	}
	return nil
}

// syncDir syncs the folder dir, so that a name made or changed in it survives a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
