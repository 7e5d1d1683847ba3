package dataset

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"backoffice/internal/domain"
)

// A big dataset file is nearly all SAM action logs, far more than an import could hold in memory
// at once. The first reading (reader.samLogs) checks each log as it streams by and
// keeps none: it counts them, notes where every chunk of File.chunk logs starts, and whether an
// entity's logs mostly come newest first. The import (stream.go) reads them again, a chunk at a
// time.
//
// samReader finds each log with jsontext (ReadValue: the bytes of one whole, well-formed value)
// and decodes it with leanSAMLog when it has the plain shape of every file this service writes,
// and otherwise as any record (walker, then JSON v2), which names whatever is wrong with it.
type samReader struct {
	dec *jsontext.Decoder
	lim *budget
	// base is the offset in the file of the decoder's offset 0; again reads the file again, for
	// a log that the lean decoder does not take.
	base  int64
	again io.ReaderAt
	i     int // the index of the next log
	in    interner
	// entity is the last entity id found canonical: the logs of one entity come in runs.
	entity domain.ID
}

const samKey = "samActionLogs"

// samReaderAt reads the logs from the one at offset start of the file, whose index is i.
func (f *File) samReaderAt(start int64, i int) *samReader {
	lim := &budget{r: bufio.NewReaderSize(io.MultiReader(strings.NewReader("["), io.NewSectionReader(f.again, start, f.size-start)), 256<<10)}
	// The first reading refused a name given twice; the lean decoder and the careful path still
	// would, so jsontext need not keep each log's names to compare them.
	sr := &samReader{dec: jsontext.NewDecoder(lim, jsontext.AllowDuplicateNames(true)), lim: lim, base: start - 1, again: f.again, i: i}
	lim.from(0, maxRecord)
	sr.dec.ReadToken() // the '[' put before it
	return sr
}

// next reads the next log into r and checks it on its own (canonical ids, an action, a date);
// ok is false after the last one.
func (sr *samReader) next(r *domain.SAMActionLog) (ok bool, err error) {
	dec := sr.dec
	at := nextOffset(dec)
	start := sr.base + at
	sr.lim.from(at, maxRecord)
	path := func() []step { return []step{{name: samKey}, {index: sr.i}} } // only an error pays for it
	kind, err := peek(dec)
	switch {
	case err != nil:
		return false, (&walker{dec: dec, lim: sr.lim, base: sr.base}).syntax(err, path())
	case kind == ']':
		dec.ReadToken()
		return false, nil
	case kind == 'n':
		return false, errorAt(start, render(path()), "expected an object, got null")
	case kind != '{':
		return false, errorAt(start, render(path()), "expected an object, got %s", kindName(kind))
	}
	raw, err := dec.ReadValue()
	switch {
	case errors.Is(err, errTooLarge):
		return false, errorAt(start, render(path()), "a record larger than %d MiB", maxRecord>>20)
	case err != nil:
		// Read again, the log names the place of the fault within it.
		if cerr := sr.careful(start, path(), r); cerr != nil {
			return false, cerr
		}
		return false, (&walker{dec: dec, lim: sr.lim, base: sr.base}).syntax(err, path())
	case !leanSAMLog(raw, r, &sr.in):
		*r = domain.SAMActionLog{}
		if err := sr.careful(start, path(), r); err != nil {
			return false, err
		}
	}
	if err := sr.check(r); err != nil {
		return false, err
	}
	sr.i++
	return true, nil
}

// careful reads the log at start again, from the file, as any record is read: it names the
// problem with a log that the lean decoder did not take, or that jsontext refused.
func (sr *samReader) careful(start int64, path []step, r *domain.SAMActionLog) error {
	end := sr.base + sr.lim.read // the decoder has read this far, and no farther
	b := make([]byte, end-start)
	n, err := sr.again.ReadAt(b, start)
	if n < len(b) {
		return &Error{Problem: "cannot read the file again: " + err.Error(), off: -1}
	}
	lim := &budget{r: bytes.NewReader(b), end: math.MaxInt64}
	w := &walker{dec: jsontext.NewDecoder(lim), lim: lim, base: start}
	raw, err := w.record(path, start, maxRecord)
	if err != nil {
		return err
	}
	return decodeRecord(raw, start, path, r)
}

// check holds a log to the rules of checker.samActionLogs (checker.samLog), but for its id being
// unique (which the import checks), and makes its ids canonical.
func (sr *samReader) check(r *domain.SAMActionLog) error {
	if id, entity, ok := validSAMLog(r, sr.entity); ok {
		r.ID, r.EntityID, sr.entity = id, entity, entity
		return nil
	}
	c := &checker{}
	path := at(samKey, sr.i)
	c.id(path+".id", &r.ID)
	c.samLog(path, r)
	return c.err
}

// samLogs reads the SAM log array at the decoder's position, checking each log and keeping none
// (but for Read, which keeps them).
func (rd *reader) samLogs() error {
	f := rd.f
	rd.dec.ReadToken() // '['
	sr := &samReader{dec: rd.dec, lim: rd.lim, again: f.again}
	var order dateOrder
	for {
		if sr.i%f.chunk == 0 {
			f.starts = append(f.starts, nextOffset(rd.dec))
		}
		var r domain.SAMActionLog
		ok, err := sr.next(&r)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		order.add(&r)
		if rd.keepLogs {
			f.ds.SAMActionLogs = append(f.ds.SAMActionLogs, r)
		}
	}
	f.logs = sr.i
	f.starts = f.starts[:(f.logs+f.chunk-1)/f.chunk]
	f.newestFirst = order.down > order.up
	if rd.keepLogs { // Read: the logs are the Dataset's, their ids checked as any key's
		f.logs = 0
		rd.kind[samKey].check(rd.c, f.ds)
		if rd.c.err != nil {
			return rd.c.err
		}
	}
	return nil
}

// dateOrder counts the logs newer and those older than the log before them of the same entity,
// among the last few entities met (logs of a few entities may come interleaved).
type dateOrder struct {
	recent [8]struct {
		entity domain.ID
		date   int64
	}
	next     int // the slot a new entity takes
	up, down int
}

func (o *dateOrder) add(r *domain.SAMActionLog) {
	date := r.ActionDate.UnixMicro()
	for k := range o.recent {
		if e := &o.recent[k]; e.entity == r.EntityID {
			switch {
			case date > e.date:
				o.up++
			case date < e.date:
				o.down++
			}
			e.date = date
			return
		}
	}
	o.recent[o.next].entity, o.recent[o.next].date = r.EntityID, date
	o.next = (o.next + 1) % len(o.recent)
}

// leanSAMLog decodes the log b, which jsontext has found to be one well-formed object, when it
// has the plain shape of the files this service writes: the names spelled exactly as the fields'
// tags, each at most once; strings of printable ASCII without escapes (an action of at most
// maxText), taken as they are; actionDate of the shape 2006-01-02T15:04:05[.fraction]Z, given to time.Time's UnmarshalJSON; samId a JSON
// integer that fits an int64 (no fraction, no exponent); no null anywhere. It reports false for
// anything else, which the careful path then reads, so that what it gives is exactly what JSON v2
// gives, under the same rules.
//
// It is kept beside the library because BenchmarkSAMLogs shows it, with jsontext finding each
// log, at least twice as fast as the careful path (walker and JSON v2) on the logs of bench/gen's
// file; the import reads each log twice (see docs/performance.md#the-imports-json).
func leanSAMLog(b []byte, r *domain.SAMActionLog, in *interner) bool {
	i := 0
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i+1 == len(b)
	}
	var seen uint8
	for {
		key, j, ok := plainString(b, i)
		if !ok {
			return false
		}
		if i = skipSpace(b, j); i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		var bit uint8
		switch string(key) {
		case "id":
			bit = 1
			var v []byte
			if v, i, ok = plainString(b, i); ok {
				r.ID = domain.ID(v)
			}
		case "entityId":
			bit = 2
			var v []byte
			if v, i, ok = plainString(b, i); ok {
				r.EntityID = domain.ID(in.get(v))
			}
		case "action":
			bit = 4
			var v []byte
			if v, i, ok = plainString(b, i); ok && len(v) <= maxText {
				r.Action = in.get(v)
			} else {
				ok = false // a longer one is refused by the careful path, naming it
			}
		case "actionDate":
			bit = 8
			start := i
			var v []byte
			if v, i, ok = plainString(b, i); ok {
				ok = plainDate(v) && r.ActionDate.UnmarshalJSON(b[start:i]) == nil
			}
		case "samId":
			bit = 16
			r.SamID, i, ok = plainInt(b, i)
		}
		if !ok || bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		if i = skipSpace(b, i); i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i+1 == len(b)
		default:
			return false
		}
	}
}

// plainString reads the string at b[i] when it holds printable ASCII only and no escape: its
// bytes are then its value. It returns the bytes between the quotes and the index past them.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		if c := b[j]; !plainByte[c] {
			if c == '"' {
				return b[i+1 : j], j + 1, true
			}
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// plainByte tells the bytes a plain string holds: printable ASCII but the quote and backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// plainDate tells a date-time of the shape this service writes, 2006-01-02T15:04:05[.fraction]Z:
// time's parser takes a few others that JSON v2 refuses (a one-digit hour, a comma before the
// fraction), which go the careful way.
func plainDate(v []byte) bool {
	return len(v) >= 20 && v[4] == '-' && v[7] == '-' && v[10] == 'T' && v[13] == ':' && v[16] == ':' &&
		v[len(v)-1] == 'Z' && (len(v) == 20 || v[19] == '.')
}

// plainInt reads the JSON integer at b[i] (no fraction or exponent) that fits an int64.
func plainInt(b []byte, i int) (int64, int, bool) {
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	switch {
	case i == digits, b[digits] == '0' && i-digits > 1: // no digits, or a leading zero
		return 0, 0, false
	case i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E'):
		return 0, 0, false
	}
	v, err := strconv.ParseInt(string(b[start:i]), 10, 64)
	return v, i, err == nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// interner shares the strings that repeat from record to record (the entity, the action), so
// that a million logs of one entity hold one copy of its id.
type interner struct {
	last []string
}

func (in *interner) get(v []byte) string {
	for _, s := range in.last {
		if s == string(v) {
			return s
		}
	}
	s := string(v)
	if len(in.last) < 8 {
		in.last = append(in.last, s)
	} else {
		copy(in.last, in.last[1:])
		in.last[len(in.last)-1] = s
	}
	return s
}
