package checkpoint

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzTailAgreesWithTheWholeFile reads a checkpoints file two ways: whole (ReadFile, what
// `audit verify` and serve's start read) and from a byte anywhere in it (what Append reads first
// to name the checkpoint before the one it writes). Whatever the file holds, neither read panics,
// and where the whole file reads, its end read from any byte gives the file's last checkpoint or
// none: never another (Append would vouch for a checkpoint that is not the file's last) and never
// an error (Append would refuse a file that verify reads).
//
//	go test ./internal/checkpoint -run '^$' -fuzz FuzzTailAgreesWithTheWholeFile -fuzztime 2m
func FuzzTailAgreesWithTheWholeFile(f *testing.F) {
	for _, seed := range seedFiles(f) {
		f.Add(seed, uint16(0))
		f.Add(seed, uint16(len(seed)/2))
		f.Add(seed, uint16(len(seed)-1))
	}
	f.Fuzz(func(t *testing.T, b []byte, at uint16) {
		whole, _, wholeErr := parse(linesOf(b), false)
		from := int(at) % (len(b) + 1)
		tail, _, tailErr := parse(linesOf(b[from:]), from > 0)
		if wholeErr != nil {
			return // the file is refused whole; what its end reads is Append's to refuse or not
		}
		if tailErr != nil {
			t.Fatalf("the whole file reads (%d checkpoints), its end from byte %d does not: %v", len(whole), from, tailErr)
		}
		if len(tail) == 0 {
			return
		}
		got := tail[len(tail)-1]
		if len(whole) == 0 {
			t.Fatalf("from byte %d: read checkpoint of seq %d, which the whole file does not hold", from, got.Seq)
		}
		want := whole[len(whole)-1]
		if got.ID() != want.ID() || !bytes.Equal(got.Note, want.Note) || got.Sig != want.Sig {
			t.Fatalf("from byte %d: the last checkpoint read is of seq %d (%s), the file's is of seq %d (%s)", from, got.Seq, got.ID(), want.Seq, want.ID())
		}
	})
}

// seedFiles are checkpoints files as Append writes them: version 1 lines, then signed notes, and
// the same with a note cut short after it (a torn one) and with one more appended after that.
func seedFiles(f *testing.F) [][]byte {
	dir := f.TempDir()
	path := filepath.Join(dir, "c")
	m := treeOf(f, "event", 9)
	var seeds [][]byte
	read := func() []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	appendAt := func(size int64) {
		if _, _, err := Append(path, allKeys(), func(prev *Checkpoint) (Checkpoint, error) {
			return Sign(headOf(f, m, size), origin, idOf(prev), time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC), "k1", key(1))
		}); err != nil {
			f.Fatal(err)
		}
	}
	for seq := int64(1); seq <= 2; seq++ {
		if _, _, err := Append(path, allKeys(), atSeq(seq, "k1")); err != nil {
			f.Fatal(err)
		}
	}
	seeds = append(seeds, read())
	appendAt(3)
	appendAt(5)
	good := read()
	seeds = append(seeds, good)
	torn := append(bytes.Clone(good), good[len(good)-40:len(good)-10]...)
	seeds = append(seeds, torn)
	if err := os.WriteFile(path, torn, 0o600); err != nil {
		f.Fatal(err)
	}
	appendAt(7)
	return append(seeds, read())
}
