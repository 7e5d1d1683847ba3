package dataset

import (
	"errors"
	"io"
)

// jsonStream reads JSON values one at a time from a reader, through a buffer that holds one value
// (and what follows it in the last read) at a time: a file of any size is read in the memory of
// its largest value, not its size. It finds where a value ends, and no more: whether the value is
// well-formed is for the decoder its bytes go to.
type jsonStream struct {
	r   io.Reader
	buf []byte
	// buf[i:n] is read and not yet consumed; base is the offset in the stream of buf[0].
	i, n int
	base int64
	eof  bool
	err  error // a read error other than io.EOF
	// max bounds a value's size: a longer one fails with errValueTooLarge.
	max int
}

// streamBuffer is the buffer's starting size: a read system call for every 1 MiB.
const streamBuffer = 1 << 20

var errValueTooLarge = errors.New("a value larger than the reader's limit")

func newJSONStream(r io.Reader, max int) *jsonStream {
	return &jsonStream{r: r, buf: make([]byte, streamBuffer), max: max}
}

// offset is the position in the stream of the next byte not consumed.
func (s *jsonStream) offset() int64 { return s.base + int64(s.i) }

// fill moves the unconsumed bytes to the front and reads more after them, growing the buffer when
// it is full (up to max and a little). It reports false when nothing more can come.
func (s *jsonStream) fill() bool {
	if s.eof || s.err != nil {
		return false
	}
	if s.i > 0 {
		copy(s.buf, s.buf[s.i:s.n])
		s.base += int64(s.i)
		s.n -= s.i
		s.i = 0
	}
	if s.n == len(s.buf) {
		if len(s.buf) > s.max {
			s.err = errValueTooLarge
			return false
		}
		s.buf = append(s.buf, make([]byte, len(s.buf))...)
	}
	for {
		k, err := s.r.Read(s.buf[s.n:])
		s.n += k
		switch {
		case errors.Is(err, io.EOF):
			s.eof = true
			return k > 0
		case err != nil:
			s.err = err
			return k > 0
		case k > 0:
			return true
		}
	}
}

// peek skips white space and returns the next byte, not consuming it; ok is false at the end.
func (s *jsonStream) peek() (c byte, ok bool) {
	for {
		for s.i < s.n {
			switch c := s.buf[s.i]; c {
			case ' ', '\t', '\n', '\r':
				s.i++
			default:
				return c, true
			}
		}
		if !s.fill() {
			return 0, false
		}
	}
}

// consume takes the byte peek returned.
func (s *jsonStream) consume() { s.i++ }

// value returns the bytes of the next value, white space before it skipped: an object or array to
// its closing bracket, a string to its closing quote, anything else up to the next delimiter. The
// bytes are the stream's own, good until the next call. At the end of the stream it returns what
// there is (the decoder then says what is missing); nil when there is nothing.
func (s *jsonStream) value() []byte {
	if _, ok := s.peek(); !ok {
		return nil
	}
	for {
		if end, ok := valueEnd(s.buf[s.i:s.n]); ok {
			v := s.buf[s.i : s.i+end]
			s.i += end
			return v
		}
		if !s.fill() {
			v := s.buf[s.i:s.n]
			s.i = s.n
			return v
		}
	}
}

// valueEnd says where the value at the start of b ends, if b holds all of it.
func valueEnd(b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	switch b[0] {
	case '{', '[':
		depth := 0
		for j := 0; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, ok := stringEnd(b[j:])
				if !ok {
					return 0, false
				}
				j += end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	case '"':
		return stringEnd(b)
	default:
		for j := 1; j < len(b); j++ {
			switch b[j] {
			case ',', ']', '}', ':', ' ', '\t', '\n', '\r', '"', '{', '[':
				return j, true
			}
		}
		return 0, false
	}
}

// stringEnd says where the string at the start of b ends, past its closing quote.
func stringEnd(b []byte) (int, bool) {
	for j := 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}
