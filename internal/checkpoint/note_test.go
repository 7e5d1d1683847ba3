package checkpoint

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

const origin = "example.com/backoffice/audit"

// memTree is a Merkle tree of records held in memory: the stored hashes tlog reads.
type memTree struct{ hashes []tlog.Hash }

func (m *memTree) add(t testing.TB, data string) {
	t.Helper()
	n := int64(len(m.leaves()))
	h, err := tlog.StoredHashes(n, []byte(data), m)
	if err != nil {
		t.Fatal(err)
	}
	m.hashes = append(m.hashes, h...)
}

func (m *memTree) leaves() []int64 {
	var out []int64
	for n := int64(0); tlog.StoredHashCount(n) < int64(len(m.hashes)); n++ {
		out = append(out, n)
	}
	return out
}

func (m *memTree) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x >= int64(len(m.hashes)) {
			return nil, fmt.Errorf("no hash %d", x)
		}
		out[i] = m.hashes[x]
	}
	return out, nil
}

// treeOf is a tree of n records named after prefix.
func treeOf(t testing.TB, prefix string, n int) *memTree {
	m := &memTree{}
	for i := range n {
		m.add(t, fmt.Sprintf("%s %d", prefix, i))
	}
	return m
}

func headOf(t testing.TB, m *memTree, size int64) Head {
	t.Helper()
	root, err := tlog.TreeHash(size, m)
	if err != nil {
		t.Fatal(err)
	}
	return Head{Size: size, Root: root, Link: strings.Repeat("cd", 32), Digest: bytes.Repeat([]byte{0xab}, 32)}
}

// atSize signs a note of m at size under key id.
func atSize(t *testing.T, m *memTree, size int64, id string) func(prev *Checkpoint) (Checkpoint, error) {
	return func(prev *Checkpoint) (Checkpoint, error) {
		return Sign(headOf(t, m, size), origin, idOf(prev), time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC), id, key(id[1]-'0'))
	}
}

// A checkpoint is a C2SP signed note that tools nobody here wrote check: note.Open with the
// verifier key `audit public-key --note` prints, and formats' log.ParseCheckpoint, which read back
// the size and root signed. A changed byte of the text, or another key, does not verify.
func TestSignedNoteChecksWithNoteAndFormats(t *testing.T) {
	m := treeOf(t, "event", 5)
	c, err := atSize(t, m, 5, "k1")(nil)
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := VerifierKey(origin, pub("k1"))
	if err != nil || !strings.HasPrefix(vkey, origin+"+") {
		t.Fatalf("verifier key %q: %v", vkey, err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(c.Note, note.VerifierList(v))
	if err != nil {
		t.Fatalf("note.Open: %v\n%s", err, c.Note)
	}
	if sum := sha256.Sum256([]byte(n.Text)); hex.EncodeToString(sum[:]) != c.ID() {
		t.Fatal("the id the next checkpoint's prev names is not the SHA-256 of the note's text")
	}
	cp, ext, _, err := log.ParseCheckpoint(c.Note, origin, v)
	if err != nil || cp.Size != 5 || !bytes.Equal(cp.Hash, c.Root[:]) || c.Root != headOf(t, m, 5).Root {
		t.Fatalf("log.ParseCheckpoint: %+v %v", cp, err)
	}
	if want := "chain " + strings.Repeat("cd", 32) + " " + strings.Repeat("ab", 32) + "\nprev -\nsigned 2026-12-02T06:00:00Z k1\n"; string(ext) != want {
		t.Fatalf("extension lines %q, want %q", ext, want)
	}
	if !c.SignedBy(pub("k1")) || c.SignedBy(pub("k2")) {
		t.Fatal("SignedBy: holds under k1 only")
	}
	other, _ := Verifier(origin, pub("k2"))
	if _, err := note.Open(c.Note, note.VerifierList(other)); err == nil {
		t.Fatal("another key's verifier opened the note")
	}
	altered := bytes.Replace(c.Note, []byte("\n5\n"), []byte("\n6\n"), 1)
	if _, err := note.Open(altered, note.VerifierList(v)); err == nil {
		t.Fatal("an altered size verified")
	}
	read, err := parseNote(c.Note)
	if err != nil || read.ID() != c.ID() || read.Seq != 5 || read.Root != c.Root || read.KeyID != "k1" || read.Digest != c.Digest {
		t.Fatalf("parse: %+v %v", read, err)
	}
	for _, bad := range []string{"", "a b", "a+b", "{x", "—x"} {
		if _, err := Sign(headOf(t, m, 5), bad, "", time.Now(), "k1", key(1)); err == nil {
			t.Fatalf("origin %q signed", bad)
		}
	}
}

// A file of version 1 lines keeps verifying when notes follow them: the first note names the
// last line (Prev), so the newest note vouches for every line before it; notes are framed by blank
// lines, so that a plain tool splits them.
func TestNotesFollowVersion1Lines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c")
	chain(t, path, "k1", "k1")
	m := treeOf(t, "event", 9)
	for _, size := range []int64{3, 7} {
		if _, appended, err := Append(path, allKeys(), nil, atSize(t, m, size, "k2")); err != nil || !appended {
			t.Fatalf("append a note: %v %v", appended, err)
		}
	}
	file, err := ReadFile(path)
	if err != nil || len(file.Entries) != 4 || file.Entries[1].IsNote() || !file.Entries[2].IsNote() || file.Entries[2].Line != 4 || len(file.Torn) != 0 {
		t.Fatalf("read: %+v %v", file, err)
	}
	vouched, unvouched, err := Vouched(file.Entries, map[string]ed25519.PublicKey{"k2": pub("k2")})
	if err != nil || len(vouched) != 4 || len(unvouched) != 0 {
		t.Fatalf("the last note vouches for the lines before it: %d %d %v", len(vouched), len(unvouched), err)
	}
	b, _ := os.ReadFile(path)
	parts := strings.Split(string(b), "\n\n")
	if len(parts) != 6 || !strings.HasPrefix(parts[1], origin+"\n3\n") || !strings.HasPrefix(parts[2], "— "+origin+" ") || parts[5] != "" {
		t.Fatalf("framing:\n%s", b)
	}
	if _, err := note.Open([]byte(parts[3]+"\n\n"+parts[4]+"\n"), note.VerifierList(mustVerifier(t, "k2"))); err != nil {
		t.Fatalf("a note cut out of the file at blank lines: %v", err)
	}
	// A note forged under a key id nobody holds, or altered, is not named by the next.
	for name, forge := range map[string]func([]byte) []byte{
		"altered": func(b []byte) []byte { return bytes.Replace(b, []byte("\n7\n"), []byte("\n8\n"), 1) },
		"forged": func(b []byte) []byte {
			return bytes.Replace(b, []byte("signed 2026-12-02T06:00:00Z k2\n\n"), []byte("signed 2026-12-02T06:00:00Z k9\n\n"), 2)
		},
	} {
		os.WriteFile(path, forge(b), 0o600)
		if _, appended, err := Append(path, allKeys(), nil, atSize(t, m, 9, "k2")); !errors.Is(err, ErrUnverifiable) || appended {
			t.Fatalf("%s: appended %v: %v", name, appended, err)
		}
	}
}

func mustVerifier(t *testing.T, id string) note.Verifier {
	t.Helper()
	v, err := Verifier(origin, pub(id))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A note cut short at any byte (a crash, a full disk) is listed as torn and left out, and the
// next append names the last whole checkpoint and is read whole; a note cut only before its
// closing blank line is whole.
func TestTornNoteAtEveryCut(t *testing.T) {
	dir := t.TempDir()
	m := treeOf(t, "event", 9)
	base := filepath.Join(dir, "base")
	chain(t, base, "k1")
	if _, _, err := Append(base, allKeys(), nil, atSize(t, m, 3, "k1")); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(base)
	read, err := ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	next, err := atSize(t, m, 5, "k1")(&read.Entries[1].Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	for cut := 1; cut <= len(next.Note); cut++ {
		path := filepath.Join(dir, fmt.Sprint(cut))
		os.WriteFile(path, append(append([]byte{}, good...), next.Note[:cut]...), 0o600)
		file, err := ReadFile(path)
		whole := cut >= len(next.Note)-1
		switch {
		case err != nil:
			t.Fatalf("cut at %d: %v", cut, err)
		case whole && (len(file.Entries) != 3 || len(file.Torn) != 0):
			t.Fatalf("the whole note: %+v", file)
		case !whole && (len(file.Entries) != 2 || !slices.Equal(file.Torn, []int{12})):
			t.Fatalf("cut at %d of %d: entries %d, torn %v\n%s", cut, len(next.Note), len(file.Entries), file.Torn, next.Note[:cut])
		}
		if _, appended, err := Append(path, allKeys(), nil, atSize(t, m, 7, "k1")); err != nil || !appended {
			t.Fatalf("cut at %d: append: %v %v", cut, appended, err)
		}
		file, err = ReadFile(path)
		if err != nil || file.Entries[len(file.Entries)-1].Seq != 7 {
			t.Fatalf("cut at %d: after the append: %+v %v", cut, file, err)
		}
		if _, _, err := Vouched(file.Entries, map[string]ed25519.PublicKey{"k1": pub("k1")}); err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
	}
	// Lines that are neither a checkpoint nor one cut short are named.
	for _, damaged := range []string{"not a checkpoint\n\n", "— " + origin + " AAAA\n\n", origin + "\nx\n\n"} {
		os.WriteFile(base, append([]byte(damaged), good...), 0o600)
		if _, err := ReadFile(base); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Fatalf("damaged %q: %v", damaged, err)
		}
	}
}

// Append finds the last note of a file longer than the part of its end it reads first.
func TestAppendAfterALongFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c")
	chain(t, path, "k1")
	m := treeOf(t, "event", 80)
	for size := int64(2); size <= 80; size++ {
		if _, appended, err := Append(path, allKeys(), nil, atSize(t, m, size, "k1")); err != nil || !appended {
			t.Fatalf("size %d: %v %v", size, appended, err)
		}
	}
	if st, _ := os.Stat(path); st.Size() <= tailChunk {
		t.Fatalf("the file is %d bytes, not longer than %d", st.Size(), tailChunk)
	}
	file, err := ReadFile(path)
	if err != nil || len(file.Entries) != 80 {
		t.Fatalf("read: %d %v", len(file.Entries), err)
	}
	if _, _, err := Vouched(file.Entries, map[string]ed25519.PublicKey{"k1": pub("k1")}); err != nil {
		t.Fatal(err)
	}
	c, appended, err := Append(path, allKeys(), nil, atSize(t, m, 80, "k1"))
	if err != nil || appended || c.ID() != file.Entries[79].ID() {
		t.Fatalf("behind the file: %v %v", appended, err)
	}
}

// ReadLast reads a long file's last checkpoint from its end, counts a torn one after it, and
// reads a missing file as holding none; what it reads is the file's end only, so damage further
// back (which ReadFile refuses) does not stop it.
func TestReadLast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c")
	if tail, err := ReadLast(path); err != nil || tail.Last != nil || tail.Torn != 0 {
		t.Fatalf("a missing file: %+v, %v", tail, err)
	}
	chain(t, path, "k1")
	m := treeOf(t, "event", 80)
	for size := int64(2); size <= 80; size++ {
		if _, _, err := Append(path, allKeys(), nil, atSize(t, m, size, "k1")); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	file, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	last := file.Entries[len(file.Entries)-1]
	cut := b[bytes.LastIndex(b, []byte("\n\n"+origin))+2:]
	damaged := append([]byte("not a checkpoint\n"), b...)
	damaged = append(damaged, cut[:len(cut)/2]...) // a torn note after the last
	os.WriteFile(path, damaged, 0o600)
	if _, err := ReadFile(path); err == nil {
		t.Fatal("ReadFile read a file with a line that is no checkpoint")
	}
	tail, err := ReadLast(path)
	if err != nil || tail.Last == nil || tail.Last.ID() != last.ID() || tail.Torn != 1 || !strings.Contains(tail.Last.What(), "the last in "+path) {
		t.Fatalf("ReadLast: %+v, %v; want the checkpoint of size %d and one torn", tail, err, last.Seq)
	}
}

// The end of a file, cut at any byte, gives the file's last checkpoint when it holds it whole,
// and none, never another or an error, when it does not: what Append reads first.
func TestTailAtEveryCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c")
	chain(t, path, "k1", "k1")
	m := treeOf(t, "event", 9)
	for _, size := range []int64{3, 5, 7} {
		if _, _, err := Append(path, allKeys(), nil, atSize(t, m, size, "k1")); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	file, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	last := file.Entries[len(file.Entries)-1]
	lastStart := bytes.LastIndex(b, []byte("\n\n"+origin)) + 2 // its first byte
	for from := 1; from < len(b); from++ {
		entries, _, err := parse(linesOf(b[from:]), true)
		switch {
		case err != nil:
			t.Fatalf("from byte %d: %v", from, err)
		case len(entries) > 0 && entries[len(entries)-1].ID() != last.ID():
			t.Fatalf("from byte %d: the last checkpoint read is of seq %d", from, entries[len(entries)-1].Seq)
		case len(entries) == 0 && from <= lastStart-2: // the tail holds the blank line before it whole
			t.Fatalf("from byte %d: the last checkpoint, whole in the tail, was not read", from)
		}
	}
}

// A newer checkpoint follows an older one only when its tree extends the older's: a root of
// another history at the newer size is refused, naming both sizes.
func TestConsistent(t *testing.T) {
	m := treeOf(t, "event", 9)
	at := func(m *memTree, size int64) Checkpoint {
		c, err := atSize(t, m, size, "k1")(nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	old := at(m, 3)
	for _, size := range []int64{3, 4, 8, 9} {
		if err := Consistent(old, at(m, size), m); err != nil {
			t.Fatalf("size 3 to %d: %v", size, err)
		}
	}
	forked := treeOf(t, "event", 3)
	forked.add(t, "another 3")
	forked.add(t, "another 4")
	err := Consistent(old, at(forked, 5), m)
	if !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), "size 5") || !strings.Contains(err.Error(), "size 3") {
		t.Fatalf("a fork: %v", err)
	}
	// Hashes the store cannot read prove nothing, and are not taken for a fork.
	if err := Consistent(old, at(m, 9), &memTree{}); err == nil || errors.Is(err, ErrInconsistent) {
		t.Fatalf("no hashes: %v", err)
	}
	if err := Consistent(at(m, 5), at(m, 4), m); err == nil {
		t.Fatal("a smaller tree followed a larger one")
	}
	if err := Consistent(at(m, 4), at(forked, 4), m); err == nil {
		t.Fatal("another root at the same size")
	}
}

// BenchmarkAppendNote appends a note to a file of many: Append reads only the file's end, so its
// cost does not grow with the file.
func BenchmarkAppendNote(b *testing.B) {
	m := treeOf(b, "event", 4)
	key1 := key(1)
	for _, notes := range []int{10, 10000} {
		b.Run(fmt.Sprintf("after %d notes", notes), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "c")
			head := headOf(b, m, 4)
			var file bytes.Buffer
			prev := ""
			for i := range notes {
				head.Size = int64(i + 1)
				c, err := Sign(head, origin, prev, time.Unix(0, 0), "k1", key1)
				if err != nil {
					b.Fatal(err)
				}
				file.Write(append(c.Note, '\n'))
				prev = c.ID()
			}
			if err := os.WriteFile(path, file.Bytes(), 0o600); err != nil {
				b.Fatal(err)
			}
			size := int64(notes)
			b.ResetTimer()
			for range b.N {
				size++
				head.Size = size
				_, appended, err := Append(path, allKeys(), nil, func(prev *Checkpoint) (Checkpoint, error) {
					return Sign(head, origin, idOf(prev), time.Unix(0, 0), "k1", key1)
				})
				if err != nil || !appended {
					b.Fatal(appended, err)
				}
			}
		})
	}
}

// BenchmarkStartRead is what serve's start reads of a checkpoints file of so many notes (a year
// of a checkpoint every 30 s is about a million): the whole file, each signature checked
// (ReadFile and Vouched, what `audit verify` does), against its end and the last note's
// signature (ReadLast and CheckPredecessor, what serve's start does).
func BenchmarkStartRead(b *testing.B) {
	m := treeOf(b, "event", 4)
	key1 := key(1)
	keys := map[string]ed25519.PublicKey{"k1": pub("k1")}
	for _, notes := range []int{1000, 100000} {
		path := filepath.Join(b.TempDir(), "c")
		head := headOf(b, m, 4)
		var file bytes.Buffer
		prev := ""
		for i := range notes {
			head.Size = int64(i + 1)
			c, err := Sign(head, origin, prev, time.Unix(0, 0), "k1", key1)
			if err != nil {
				b.Fatal(err)
			}
			file.Write(append(c.Note, '\n'))
			prev = c.ID()
		}
		if err := os.WriteFile(path, file.Bytes(), 0o600); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("whole file of %d notes", notes), func(b *testing.B) {
			for b.Loop() {
				read, err := ReadFile(path)
				if err != nil {
					b.Fatal(err)
				}
				if v, _, err := Vouched(read.Entries, keys); err != nil || len(v) != notes {
					b.Fatal(len(v), err)
				}
			}
		})
		b.Run(fmt.Sprintf("last of %d notes", notes), func(b *testing.B) {
			for b.Loop() {
				tail, err := ReadLast(path)
				if err != nil || tail.Last == nil || tail.Last.Seq != int64(notes) {
					b.Fatal(err)
				}
				if err := CheckPredecessor(tail.Last.Checkpoint, keys); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
