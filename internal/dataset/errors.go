package dataset

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Error names where in the file a problem is, as a path (lineItems[3].orderId), and what it is;
// an error of a file read by ReadFile also says the line and column.
type Error struct {
	Path    string
	Problem string
	// Line and Column are the place of the problem in the file, counted as an editor counts them
	// (both from 1, the column in characters); 0 when not known (a Dataset imported from memory).
	Line, Column int
	// off is the problem's offset in the file, when the reading knew it (-1: not known, to be
	// found from Path).
	off int64
	// blank: the problem is the white space that starts at off, which is its place (other
	// problems are placed past white space, where the token at fault starts).
	blank bool
}

func (e *Error) Error() string {
	s := e.Problem
	if e.Path != "" {
		s = e.Path + ": " + s
	}
	if e.Line > 0 {
		s += fmt.Sprintf(" (line %d, column %d)", e.Line, e.Column)
	}
	return s
}

// Errorf builds an Error about the value at path, whose place is found from the path.
func Errorf(path, format string, args ...any) *Error {
	return &Error{Path: path, Problem: fmt.Sprintf(format, args...), off: -1}
}

// errorAt builds an Error about the byte at offset off of the file.
func errorAt(off int64, path, format string, args ...any) *Error {
	return &Error{Path: path, Problem: fmt.Sprintf(format, args...), off: off}
}

// at is the path of record i of key.
func at(key string, i int) string { return key + "[" + strconv.Itoa(i) + "]" }

// A path is a key, then names (.name, or ["name"] when it is not a plain word) and indexes
// ([3]): partners[0].name, fileBuilds[0].settings.tips.presetsPercent[2].

// step is a step of a path: an object's member by name, or (name empty) an array's element.
type step struct {
	name  string
	index int
}

// render writes steps as a path.
func render(steps []step) string {
	var s strings.Builder
	for k, p := range steps {
		switch {
		case p.name == "":
			s.WriteString("[" + strconv.Itoa(p.index) + "]")
		case k == 0:
			s.WriteString(p.name)
		case plainName(p.name):
			s.WriteString("." + p.name)
		default:
			s.WriteString("[" + strconv.Quote(p.name) + "]")
		}
	}
	return s.String()
}

// parsePath reads a path that render wrote; ok is false for anything else.
func parsePath(path string) (steps []step, ok bool) {
	end := strings.IndexAny(path, ".[")
	if end < 0 {
		end = len(path)
	}
	if end == 0 {
		return nil, false
	}
	steps, rest := []step{{name: path[:end]}}, path[end:]
	for rest != "" {
		switch {
		case rest[0] == '.':
			end := strings.IndexAny(rest[1:], ".[")
			if end < 0 {
				end = len(rest) - 1
			}
			steps, rest = append(steps, step{name: rest[1 : 1+end]}), rest[1+end:]
		case strings.HasPrefix(rest, `["`):
			quoted, err := strconv.QuotedPrefix(rest[1:])
			if err != nil || !strings.HasPrefix(rest[1+len(quoted):], "]") {
				return nil, false
			}
			name, _ := strconv.Unquote(quoted)
			steps, rest = append(steps, step{name: name}), rest[2+len(quoted):]
		case rest[0] == '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, false
			}
			i, err := strconv.Atoi(rest[1:end])
			if err != nil || i < 0 {
				return nil, false
			}
			steps, rest = append(steps, step{index: i}), rest[end+1:]
		default:
			return nil, false
		}
	}
	return steps, true
}

func plainName(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// place gives err, an error about the file at r, its line and column: from the offset the reading
// knew, or else from its path, looked up in the file (find). Only an error pays for this.
func place(r io.ReaderAt, err error, find func(steps []step) (int64, bool)) error {
	e, ok := err.(*Error)
	if !ok || e.Line > 0 {
		return err
	}
	off := e.off
	if off < 0 {
		if steps, ok := parsePath(e.Path); ok && find != nil {
			if o, found := find(steps); found {
				off = o
			}
		}
	}
	if off < 0 {
		return err
	}
	// jsontext places a fault at or after an offset: past white space is where it is.
	var b [64]byte
	for n, _ := r.ReadAt(b[:], off); n > 0 && !e.blank; n, _ = r.ReadAt(b[:], off) {
		k := 0
		for k < n && (b[k] == ' ' || b[k] == '\t' || b[k] == '\n' || b[k] == '\r') {
			k++
		}
		off += int64(k)
		if k < n {
			break
		}
	}
	placed := *e
	placed.Line, placed.Column = lineColumn(r, off)
	return &placed
}

// lineColumn counts the lines and characters before offset off of r.
func lineColumn(r io.ReaderAt, off int64) (line, col int) {
	line, col = 1, 1
	buf := make([]byte, 64<<10)
	for at := int64(0); at < off; {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), off-at)], at)
		for _, c := range buf[:n] {
			switch {
			case c == '\n':
				line, col = line+1, 1
			case c&0xc0 != 0x80: // not a UTF-8 continuation byte: a character starts
				col++
			}
		}
		at += int64(n)
		if err != nil || n == 0 {
			break
		}
	}
	return line, col
}
