package checkpoint

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzTailAgreesWithTheWholeFile reads a checkpoints file two ways: whole (ReadFile, what
// `audit verify` reads) and from a byte anywhere in it (what Append and serve's start read first,
// ReadLast). Whatever the file holds, neither read panics, and where the whole file reads, its end
// read from any byte gives the file's last checkpoint or none: never another (Append would vouch
// for a checkpoint that is not the file's last) and never an error (Append would refuse a file
// that verify reads); and it gives the last one whenever that one starts after the end's first
// line (a note: with the blank line before it), which may be cut: else every read of the end
// would read on to the file's start.
//
//	go test ./internal/checkpoint -run '^$' -fuzz FuzzTailAgreesWithTheWholeFile -fuzztime 2m
func FuzzTailAgreesWithTheWholeFile(f *testing.F) {
	for _, seed := range seedFiles(f) {
		// Cuts through the file's parts: within a version 1 line, a note's text, its signature,
		// on the blank line before the last note, and on a torn one.
		for _, at := range []int{
			bytes.Index(seed, []byte(`{"v":`)) + 5,
			bytes.LastIndex(seed, []byte("\n\n")) - 1,
			bytes.LastIndex(seed, []byte("\n\n")) + 1,
			bytes.LastIndex(seed, []byte("\n— ")) + 3,
			bytes.LastIndex(seed, []byte("\n"+origin)) + 5,
			len(seed) / 3, 2 * len(seed) / 3,
		} {
			if at > 0 && at < len(seed) {
				f.Add(seed, uint16(at))
			}
		}
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
			if len(whole) > 0 && from > 0 && wholeInTail(b, from, whole[len(whole)-1]) {
				t.Fatalf("from byte %d: the last checkpoint (line %d) is whole in the end read, which found none", from, whole[len(whole)-1].Line)
			}
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
		if _, _, err := Append(path, allKeys(), nil, func(prev *Checkpoint) (Checkpoint, error) {
			return Sign(headOf(f, m, size), origin, idOf(prev), time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC), "k1", key(1))
		}); err != nil {
			f.Fatal(err)
		}
	}
	for seq := int64(1); seq <= 2; seq++ {
		if _, _, err := Append(path, allKeys(), nil, atSeq(seq, "k1")); err != nil {
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

// wholeInTail says whether the end of b from byte from (from > 0) holds c, a checkpoint the whole
// b read at c.Line, after the end's first line, which may be cut: a version 1 line from its first
// byte, a note from the blank line before it, where the end's read finds a note's start. (A note
// right after another's signature lines, with no blank line between, reads whole but not from
// the end: Append never writes one so, and the end's read then reads on to the file's start.)
func wholeInTail(b []byte, from int, c Entry) bool {
	nl := bytes.IndexByte(b[from:], '\n')
	if nl < 0 {
		return false
	}
	firstLineEnd := from + nl + 1
	line := c.Line
	if c.IsNote() {
		line--
		if line < 1 || len(bytes.TrimSpace(lineAt(b, line))) > 0 {
			return false
		}
	}
	return line >= 1 && lineStart(b, line) >= firstLineEnd
}

// lineAt is line n of b (counted from 1), without its newline.
func lineAt(b []byte, n int) []byte {
	line, _, _ := bytes.Cut(b[lineStart(b, n):], []byte("\n"))
	return line
}

// lineStart is the offset in b of the first byte of line n (counted from 1).
func lineStart(b []byte, n int) int {
	at := 0
	for ; n > 1; n-- {
		i := bytes.IndexByte(b[at:], '\n')
		if i < 0 {
			return len(b)
		}
		at += i + 1
	}
	return at
}
