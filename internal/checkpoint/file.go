package checkpoint

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"golang.org/x/mod/sumdb/tlog"
)

// File is a checkpoints file as read.
type File struct {
	Name    string
	Entries []Entry
	// Torn are the lines where a checkpoint a write left unfinished starts (a full disk, a crash
	// while appending): they are left out, and the checkpoints around them are checked as if they
	// were not there.
	Torn []int
}

// Append appends, at the end of the file at path, the checkpoint sign makes given the file's
// last checkpoint (its predecessor, nil when there is none), and syncs it to disk before it
// returns. A note is written after a blank line, and followed by one; a version 1 line (only
// tests still make them) on a line of its own. It holds an exclusive lock on the file (flock)
// from reading the predecessor to the sync, so that processes appending to one file each name
// the checkpoint truly before theirs. A torn checkpoint at the end is left where it is, and the
// new one starts after it.
//
// after is the checkpoint the caller last wrote to the file or read from it (nil: none, and a
// missing file is made, mode 0600). The file must still hold it, followed only by checkpoints
// that each name the one before it (another process's appends); one that does not was replaced
// or rewritten (moved over, truncated, restored from a copy), and Append refuses it
// (ErrReplaced) and writes nothing: a checkpoint appended there would not follow the ones the
// caller vouched for, and those would be missing from the file an auditor reads. With after
// given, a missing file is refused too, not made anew.
//
// A checkpoint that names its predecessor vouches for it, so Append refuses (ErrUnverifiable)
// unless the predecessor's signature holds under one of keys: a checkpoint appended by hand, or
// one signed under a key that is not given, is never vouched for unchecked. When the predecessor
// already covers the seq sign made, or a later one (another process appending to the file got
// there first), nothing is written: Append returns the predecessor, and appended false.
func Append(path string, keys map[string]ed25519.PublicKey, after *Checkpoint, sign func(prev *Checkpoint) (Checkpoint, error)) (c Checkpoint, appended bool, err error) {
	f, err := openToAppend(path, after)
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("audit checkpoints: %w", err)
	}
	defer f.Close()
	unlock, err := lockFile(f)
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("audit checkpoints: %s: lock: %w", path, err)
	}
	defer unlock()
	prev, end, _, err := lastInFile(f)
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("audit checkpoints: %s: %w", path, err)
	}
	if after != nil {
		if err := holdsSince(f, prev, *after); err != nil {
			return Checkpoint{}, false, fmt.Errorf("audit checkpoints: %s: %w", path, err)
		}
	}
	if prev != nil {
		if err := CheckPredecessor(*prev, keys); err != nil {
			return Checkpoint{}, false, fmt.Errorf("%s: %w", path, err)
		}
	}
	if c, err = sign(prev); err != nil {
		return Checkpoint{}, false, err
	}
	if prev != nil && c.Seq <= prev.Seq {
		return *prev, false, nil
	}
	b, err := framed(c, end)
	if err != nil {
		return Checkpoint{}, false, err
	}
	if _, err = f.Write(b); err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = readsBack(path, c)
	}
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("audit checkpoints: %s: %w", path, err)
	}
	return c, true, nil
}

// ErrReplaced means the file at a checkpoints path is not the one its appender last wrote to or
// read from: it no longer holds the checkpoint the appender last wrote or read there, followed
// by checkpoints that each name the one before it.
var ErrReplaced = errors.New("the checkpoints file was replaced or rewritten")

// whatToDoReplaced is what an operator does about a file Append refused as replaced.
const whatToDoReplaced = "Nothing is appended to it: keep both files and find out who replaced it; then put back the file that holds that checkpoint or, if the file now there is the one to use, restart serve on it (serve checks its last checkpoint as it starts)"

// openToAppend opens the file at path to append to it: made if missing when the caller knows no
// checkpoint of it (after nil); else a missing file is one moved or removed (ErrReplaced).
func openToAppend(path string, after *Checkpoint) (*os.File, error) {
	if after == nil {
		return os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s is gone (moved or removed); it held the checkpoint of %s, which this process last wrote or read there. Nothing is made in its place: find out who moved it, then put it back or, if a new file is meant, restart serve (which starts one)", ErrReplaced, path, describe(*after))
	}
	return f, err
}

// holdsSince says why f, whose last checkpoint is last, is not the file whose checkpoint after
// its appender last wrote or read: f must hold after, and after it only checkpoints that each
// name the one before it. It reads back from the file's end only as far as after: what it
// reads grows with what other processes appended since, not with the file.
func holdsSince(f *os.File, last *Checkpoint, after Checkpoint) error {
	if last != nil && last.ID() == after.ID() {
		return nil
	}
	want := after.ID()
	isAfter := func(e Entry) bool { return e.ID() == want }
	entries, _, _, err := tailEntries(f, func(entries []Entry) bool { return slices.ContainsFunc(entries, isAfter) })
	if err != nil {
		return err
	}
	i := lastIndexFunc(entries, isAfter)
	if i < 0 {
		found := "it holds no checkpoint"
		if last != nil {
			found = "its last is the checkpoint of " + describe(*last)
		}
		return fmt.Errorf("%w: it no longer holds the checkpoint of %s, which this process last wrote or read there; %s. It was moved over, truncated or rewritten, and a checkpoint appended to it would not follow the ones this process vouched for. %s", ErrReplaced, describe(after), found, whatToDoReplaced)
	}
	for j := i + 1; j < len(entries); j++ {
		if entries[j].Prev != entries[j-1].ID() {
			return fmt.Errorf("%w: the checkpoint of %s, after the one of %s that this process last wrote or read there, does not name the checkpoint before it: the file was rewritten since. %s", ErrReplaced, describe(entries[j].Checkpoint), describe(after), whatToDoReplaced)
		}
	}
	return nil
}

// lastIndexFunc is the index of the last of entries for which f holds, -1 for none.
func lastIndexFunc(entries []Entry, f func(Entry) bool) int {
	for i := len(entries) - 1; i >= 0; i-- {
		if f(entries[i]) {
			return i
		}
	}
	return -1
}

// describe names a checkpoint in a message: its seq, when it was signed, and its id's first
// digits.
func describe(c Checkpoint) string {
	return fmt.Sprintf("seq %d (signed at %s, id %.16s)", c.Seq, c.At, c.ID())
}

// ErrNotReadBack means a checkpoint just written is not the last one of the file at its path:
// the file was replaced or rewritten while it was appended to, and what was signed is not where
// an auditor will look for it.
var ErrNotReadBack = errors.New("the checkpoint written is not the file's last when read back")

// readsBack reads the file at path anew, by its name rather than the handle written to (a file
// renamed over the one appended to holds what an auditor reads), and says whether its last
// checkpoint is c as written.
func readsBack(path string, c Checkpoint) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	last, _, _, err := lastInFile(f)
	if err != nil {
		return fmt.Errorf("reading back: %w", err)
	}
	if last == nil || last.ID() != c.ID() || !bytes.Equal(last.Note, c.Note) || last.Sig != c.Sig {
		return ErrNotReadBack
	}
	return nil
}

// framed is c as appended to a file whose last bytes are end: a note between blank lines, a
// version 1 line on a line of its own.
func framed(c Checkpoint, end []byte) ([]byte, error) {
	var b []byte
	if !c.IsNote() {
		line, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		if len(end) > 0 && !bytes.HasSuffix(end, []byte("\n")) {
			b = append(b, '\n')
		}
		return append(append(b, line...), '\n'), nil
	}
	switch {
	case len(end) == 0 || bytes.HasSuffix(end, []byte("\n\n")):
	case bytes.HasSuffix(end, []byte("\n")):
		b = append(b, '\n')
	default:
		b = append(b, '\n', '\n')
	}
	return append(append(b, c.Note...), '\n'), nil
}

// CheckPredecessor says why a new checkpoint may not name p, a file's last checkpoint (an
// ErrUnverifiable): its key is not among keys, or its signature does not hold under it. Append
// holds every append to it; serve holds a file to it before it starts.
func CheckPredecessor(p Checkpoint, keys map[string]ed25519.PublicKey) error {
	what := fmt.Sprintf("the last checkpoint in the file (seq %d, signed at %s)", p.Seq, p.At)
	pub, ok := keys[p.KeyID]
	switch {
	case !ok:
		return fmt.Errorf("%w: %s names key %s, which the ring does not hold: a new checkpoint would vouch for it unchecked; add the key back to the ring, or find out where it came from and move the file aside (keep it)", ErrUnverifiable, what, p.KeyID)
	case !p.SignedBy(pub):
		return fmt.Errorf("%w: the signature of %s does not hold under key %s: forged or altered; find out why, then move the file aside (keep it)", ErrUnverifiable, what, p.KeyID)
	}
	return nil
}

// ErrInconsistent marks a tree that does not extend the one a checkpoint states: the log was
// rewritten, or a checkpoint forged.
var ErrInconsistent = errors.New("audit log not consistent with its checkpoint")

// Consistent says why next, a checkpoint newer than prev, may not follow it: the tree next
// states does not extend the one prev states (ErrInconsistent), or r cannot prove it. A version 1
// predecessor states no tree (the chain's digest anchors it): nothing to prove.
func Consistent(prev, next Checkpoint, r tlog.HashReader) error {
	if !prev.IsNote() || !next.IsNote() {
		return nil
	}
	if err := Extends(next.Seq, next.Root, prev, r); err != nil {
		return fmt.Errorf("audit checkpoints: the checkpoint of size %d: %w", next.Seq, err)
	}
	return nil
}

// Extends says why the tree of size n and root h does not extend the one prev (a note) states:
// tlog.ProveTree over r, the store's stored hashes, checked with tlog.CheckTree against both
// roots. A proof that does not check is ErrInconsistent, naming both sizes; one r cannot make is
// another error.
func Extends(n int64, h tlog.Hash, prev Checkpoint, r tlog.HashReader) error {
	if n == prev.Seq && h == prev.Root {
		return nil
	}
	if n < prev.Seq {
		return fmt.Errorf("%w: a tree of size %d cannot follow the checkpoint of size %d (signed at %s)", ErrInconsistent, n, prev.Seq, prev.At)
	}
	p, err := tlog.ProveTree(n, prev.Seq, r)
	if err != nil {
		return fmt.Errorf("cannot prove the tree of size %d consistent with the checkpoint of size %d: %v", n, prev.Seq, err)
	}
	if err := tlog.CheckTree(p, n, h, prev.Seq, prev.Root); err != nil {
		return fmt.Errorf("%w: the tree of size %d does not extend the checkpoint of size %d (signed at %s): %v", ErrInconsistent, n, prev.Seq, prev.At, err)
	}
	return nil
}

// tailChunk is how much of a file's end Append reads first to find the last checkpoint.
const tailChunk = 16 << 10

// lastInFile reads f's last checkpoint (nil when it has none), the file's last bytes (what a
// new checkpoint's framing depends on) and how many torn checkpoints it met on the way. It reads
// the end of the file, more of it while the checkpoints there are torn ones: what it reads does
// not grow with the file.
func lastInFile(f *os.File) (last *Checkpoint, end []byte, torn int, err error) {
	entries, end, torn, err := tailEntries(f, func(entries []Entry) bool { return len(entries) > 0 })
	if err != nil || len(entries) == 0 {
		return nil, end, torn, err
	}
	c := entries[len(entries)-1].Checkpoint
	return &c, end, torn, nil
}

// tailEntries reads the checkpoints that start in f's end, reading more of it, back to its start
// if need be, until enough says the checkpoints read will do; with them, the file's last bytes
// and how many torn checkpoints it met. Entries' Line counts from the first line read.
func tailEntries(f *os.File, enough func([]Entry) bool) (entries []Entry, end []byte, torn int, err error) {
	st, err := f.Stat()
	if err != nil {
		return nil, nil, 0, err
	}
	size := st.Size()
	for chunk := int64(tailChunk); ; chunk *= 2 {
		from := max(0, size-chunk)
		b := make([]byte, size-from)
		if _, err := f.ReadAt(b, from); err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, 0, err
		}
		end = b[max(0, len(b)-2):]
		entries, t, err := parse(linesOf(b), from > 0)
		if err != nil {
			return nil, end, 0, fmt.Errorf("near the end: %w", err)
		}
		if from == 0 || enough(entries) {
			return entries, end, len(t), nil
		}
	}
}

// Tail is the end of a checkpoints file, as ReadLast reads it.
type Tail struct {
	// Last is the file's newest checkpoint (nil when it holds none); its Line is 0, as the lines
	// before it are not counted.
	Last *Entry
	// Torn counts the torn checkpoints read near the end.
	Torn int
}

// ReadLast reads the newest checkpoint of the file at path, from the file's end only: what it
// reads does not grow with the file's history, and the checkpoints before it are not checked
// (ReadFile and Vouched check a whole file). A missing file holds none.
func ReadLast(path string) (Tail, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return Tail{}, nil
	}
	if err != nil {
		return Tail{}, fmt.Errorf("audit checkpoints: %w", err)
	}
	defer f.Close()
	last, _, torn, err := lastInFile(f)
	if err != nil {
		return Tail{}, fmt.Errorf("audit checkpoints: %s: %w", path, err)
	}
	t := Tail{Torn: torn}
	if last != nil {
		t.Last = &Entry{Checkpoint: *last, File: path}
	}
	return t, nil
}

// ReadFile reads a checkpoints file. A checkpoint a write left unfinished (torn) is listed and
// left out; anything else that is not a checkpoint is an error naming its line.
func ReadFile(path string) (File, error) {
	f, err := os.Open(path)
	if err != nil {
		return File{}, fmt.Errorf("audit checkpoints: %w", err)
	}
	defer f.Close()
	return read(f, path)
}

func read(r io.Reader, name string) (File, error) {
	br := bufio.NewReader(r)
	var readErr error
	lines := &lineReader{next: func() ([]byte, bool) {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			readErr = err
			return nil, false
		}
		return line, len(line) > 0
	}}
	entries, torn, err := parse(lines, false)
	if readErr != nil {
		return File{}, fmt.Errorf("audit checkpoints: %s: %w", name, readErr)
	}
	if err != nil {
		return File{}, fmt.Errorf("audit checkpoints: %s %w", name, err)
	}
	for i := range entries {
		entries[i].File = name
	}
	return File{Name: name, Entries: entries, Torn: torn}, nil
}

// lineReader hands out a file's lines one at a time, each with its newline (the last may have
// none), with one line of lookahead; n is how many it has handed out. A file is read as it
// streams: only its checkpoints are kept.
type lineReader struct {
	next func() ([]byte, bool)
	held []byte
	has  bool
	n    int
}

// linesOf reads the lines of b.
func linesOf(b []byte) *lineReader {
	return &lineReader{next: func() ([]byte, bool) {
		if len(b) == 0 {
			return nil, false
		}
		line, rest, found := bytes.Cut(b, []byte("\n"))
		if found {
			line = line[:len(line)+1]
		}
		b = rest
		return line, true
	}}
}

// peek is the next line, not handed out; ok is false at the end.
func (r *lineReader) peek() (line []byte, ok bool) {
	if !r.has {
		r.held, r.has = r.next()
		if !r.has {
			return nil, false
		}
	}
	return r.held, true
}

// read hands out the next line.
func (r *lineReader) read() (line []byte, ok bool) {
	line, ok = r.peek()
	if ok {
		r.has = false
		r.n++
	}
	return line, ok
}

// parse reads the checkpoints in lines: version 1 lines, each on a line of its own, and notes,
// each its text, a blank line and its signature lines, with blank lines between them. tail: the
// lines are the end of a file cut anywhere, and parse starts at the first checkpoint that starts
// in them. Entries' Line counts from the first line.
func parse(lines *lineReader, tail bool) (entries []Entry, torn []int, err error) {
	if tail {
		skipToStart(lines)
	}
	for {
		l, ok := lines.peek()
		if !ok {
			return entries, torn, nil
		}
		n := lines.n + 1
		trimmed := bytes.TrimSpace(l)
		switch {
		case len(trimmed) == 0:
			lines.read()
		case trimmed[0] == '{':
			lines.read()
			c, t, err := parseLine(l)
			if err != nil {
				return nil, nil, fmt.Errorf("line %d: not a checkpoint of version 1", n)
			}
			if t {
				torn = append(torn, n)
			}
			if c != nil {
				entries = append(entries, Entry{Checkpoint: *c, Line: n})
			}
		case isSigLine(l):
			return nil, nil, fmt.Errorf("line %d: signature lines with no checkpoint before them", n)
		default:
			msg := readNote(lines)
			c, err := parseNote(msg)
			switch {
			case err == nil:
				entries = append(entries, Entry{Checkpoint: *c, Line: n})
			case tornNote(msg):
				torn = append(torn, n)
			default:
				return nil, nil, fmt.Errorf("line %d: not a checkpoint: %v", n, err)
			}
		}
	}
}

// readNote reads the note that starts at the next line: its text up to a blank line and, when
// signature lines follow that, the blank line and them.
func readNote(lines *lineReader) []byte {
	var msg []byte
	for l, ok := lines.peek(); ok && len(bytes.TrimSpace(l)) > 0; l, ok = lines.peek() {
		lines.read()
		msg = append(msg, l...)
	}
	if blank, ok := lines.read(); ok { // the blank line after the text
		if l, ok := lines.peek(); ok && isSigLine(l) {
			msg = append(msg, blank...)
			for l, ok := lines.peek(); ok && isSigLine(l); l, ok = lines.peek() {
				lines.read()
				msg = append(msg, l...)
			}
		}
	}
	// A note cut only before its last newline is whole: the next append's blank line ends it.
	if len(msg) > 0 && msg[len(msg)-1] != '\n' {
		msg = append(msg, '\n')
	}
	return msg
}

// isSigLine tells whether l is a signature line, or a cut one (even within its first rune).
func isSigLine(l []byte) bool {
	l = bytes.TrimSuffix(l, []byte("\n"))
	return bytes.HasPrefix(l, []byte("—")) || len(l) > 0 && bytes.HasPrefix([]byte("—"), l)
}

// skipToStart reads lines, the end of a file cut anywhere, up to the first where a checkpoint
// starts: a version 1 line after the first line (which may be cut), or a note's text after a
// blank line that is whole (not the first line, which may be the end of any line). A note's
// origin never starts with "{" (ValidOrigin).
func skipToStart(lines *lineReader) {
	lines.read()
	blankBefore := false
	for l, ok := lines.peek(); ok; l, ok = lines.peek() {
		trimmed := bytes.TrimSpace(l)
		if len(trimmed) > 0 && (trimmed[0] == '{' || blankBefore && !isSigLine(l)) {
			return
		}
		lines.read()
		blankBefore = len(trimmed) == 0
	}
}

// parseLine reads one line of a checkpoints file: a checkpoint of version 1, nothing (a blank
// line), or a torn line (torn: a checkpoint cut short, possibly followed on the same line by a
// whole one, as an append after a torn line left it before appends started on a line of their
// own). Anything else is an error.
func parseLine(line []byte) (c *Checkpoint, torn bool, err error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, false, nil
	}
	if c, err := decode(line); err == nil {
		return c, false, nil
	} else if !errors.Is(err, io.ErrUnexpectedEOF) {
		// A torn prefix with a whole checkpoint appended onto it.
		if i := bytes.LastIndex(line, []byte(`{"v":`)); i > 0 {
			if _, perr := decode(line[:i]); errors.Is(perr, io.ErrUnexpectedEOF) {
				if c, err := decode(line[i:]); err == nil {
					return c, true, nil
				}
			}
		}
		return nil, false, err
	}
	return nil, true, nil
}

// decode reads one checkpoint of version 1 that fills b; io.ErrUnexpectedEOF when b is one cut
// short.
func decode(b []byte) (*Checkpoint, error) {
	var c Checkpoint
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, err
	}
	if dec.More() || c.V != 1 {
		return nil, errors.New("not a checkpoint of version 1")
	}
	return &c, nil
}
