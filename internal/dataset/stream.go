package dataset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"backoffice/internal/domain"
	"backoffice/internal/store"
)

// A big dataset file is nearly all SAM action logs: a million of them are 175 MB, five million
// close to a gigabyte. ReadFile and ImportFile import such a file in memory that does not grow
// with its logs, in two passes over it:
//
//  1. ReadFile reads the file through once. Every key but samActionLogs is kept, decoded and
//     checked as Read does (those keys are small); each SAM log is decoded and checked on its own
//     and then dropped, its id only added to a Bloom filter (bloom.go), which names the few ids
//     that may repeat an earlier one.
//  2. ImportFile writes the other records, then reads the logs again from where the array starts,
//     and hands them to the store a chunk at a time, checking each log's references (against the
//     file's other records, in memory, and the database) and, for the few ids the filter named,
//     whether they really repeat.
//
// A log whose id is stored already fails the store's insert (bulkload.ErrSAMLogTaken); after the
// rollback a third pass asks the database about the logs' ids, a chunk at a time, to name the
// first. The references of the logs may name records anywhere in the file, and the keys may come
// in any order: the first pass has read all of them before the second starts.

// File is a dataset file read by ReadFile, ready for ImportFile.
type File struct {
	ds   *Dataset // every key but samActionLogs
	r    io.ReaderAt
	size int64
	// sam is the offset of the samActionLogs array, -1 when the file has none; logs is how many
	// logs it holds, and maybeTaken the ids that may repeat an earlier log's.
	sam        int64
	logs       int
	maybeTaken map[[16]byte]bool
	// starts holds the offset of each chunk's first log (samChunkLogs logs a chunk), the first
	// chunk's at the array's start; newestFirst says that the logs of an entity mostly come newest
	// first (as export writes them), and the chunks go to the store last one first.
	starts      []int64
	newestFirst bool
}

// Records counts the records of the file, its SAM logs and deletes included.
func (f *File) Records() int { return f.ds.Records() + f.logs }

// SAMLogs is how many SAM action logs the file holds.
func (f *File) SAMLogs() int { return f.logs }

const samKey = "samActionLogs"

// Limits of the stream: no SAM log comes near maxSAMLog (they are about 180 bytes), and one that
// does is refused rather than read into memory whole; another key's array is kept whole anyway.
const (
	maxSAMLog = 1 << 20
	maxValue  = 1 << 31
)

// ReadFile reads and checks the dataset file of size bytes at r, as Read does, keeping its SAM
// action logs out of memory: ImportFile reads them again. The errors are Read's, naming the
// record and field.
func ReadFile(r io.ReaderAt, size int64) (*File, error) {
	f := &File{r: r, size: size, sam: -1}
	s := newJSONStream(io.NewSectionReader(r, 0, size), maxValue)
	rest, samErr, err := f.walk(s)
	if err != nil {
		return nil, locate(r, err)
	}
	if f.ds, err = readBytes(rest, samErr); err != nil {
		return nil, err
	}
	return f, nil
}

// locate adds to an error about the file's JSON the line and column it is at, as an editor counts
// them (lines from 1, characters within the line from 1).
func locate(r io.ReaderAt, err error) error {
	var e *Error
	if !errors.As(err, &e) || e.pos == 0 {
		return err
	}
	line, col := lineColumn(r, e.pos-1)
	return &Error{Path: e.Path, Problem: fmt.Sprintf("%s (line %d, column %d)", e.Problem, line, col)}
}

// lineColumn counts the lines and characters before offset off of r; only an error pays for it.
func lineColumn(r io.ReaderAt, off int64) (line, col int) {
	line, col = 1, 1
	buf := make([]byte, 64<<10)
	for at := int64(0); at < off; {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), off-at)], at)
		for _, c := range buf[:n] {
			switch {
			case c == '\n':
				line, col = line+1, 1
			case c&0xc0 != 0x80: // not a continuation byte: a character starts
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

// jsonError is the error for the fault checkJSON found in the value at offset start of the file,
// which is at path.
func jsonError(path string, start int64, f *jsonFault) *Error {
	return &Error{Path: path + f.path, Problem: f.problem, pos: start + int64(f.off) + 1}
}

// walk reads the file's object key by key: the SAM log array is checked as it streams by
// (walkSAM), every other key's value is copied into rest, an object of them all, for readBytes.
// A problem with a log comes back as samErr, for the checks to report in its turn; err is a
// problem with the file's structure, which ends the reading.
func (f *File) walk(s *jsonStream) (rest []byte, samErr *Error, err error) {
	c, ok := s.peek()
	switch {
	case !ok && s.err == nil:
		return nil, nil, &Error{Problem: "not a JSON object: the file is empty"}
	case !ok || c != '{':
		start := s.offset()
		return nil, nil, s.fail(notObject(s.value(), start))
	}
	s.consume()
	rest = []byte{'{'}
	seen := map[string]bool{}
	for first := true; ; first = false {
		if c, ok = s.peek(); ok && c == '}' && first {
			s.consume()
			break
		}
		if !ok || c != '"' {
			return nil, nil, s.malformed(c, ok, "looking for the beginning of a key")
		}
		start := s.offset()
		rawKey := bytes.Clone(s.value()) // the stream's bytes move as it reads on
		var key string
		if fault := checkJSON(rawKey, maxRecord); fault != nil {
			return nil, nil, s.fail(jsonError("", start, fault))
		}
		_ = json.Unmarshal(rawKey, &key) // checked: a string
		if seen[key] {
			return nil, nil, &Error{Path: key, Problem: "duplicate key: the file may hold each key once", pos: start + 1}
		}
		seen[key] = true
		if c, ok = s.peek(); !ok || c != ':' {
			return nil, nil, s.malformed(c, ok, "after a key")
		}
		s.consume()
		if key == samKey {
			if samErr, err = f.walkSAM(s); err != nil {
				return nil, nil, err
			}
		} else {
			v := s.value()
			start := s.offset() - int64(len(v))
			if fault := checkJSON(v, recordLimit(key)); fault != nil {
				return nil, nil, s.fail(jsonError(key, start, fault))
			}
			if len(rest) > 1 {
				rest = append(rest, ',')
			}
			rest = append(append(append(rest, rawKey...), ':'), v...)
		}
		if c, ok = s.peek(); !ok || c != ',' && c != '}' {
			return nil, nil, s.malformed(c, ok, "after a key's value")
		}
		s.consume()
		if c == '}' {
			break
		}
	}
	if _, ok := s.peek(); ok {
		return nil, nil, &Error{Problem: "unexpected data after the JSON object", pos: s.offset() + 1}
	}
	if s.err != nil {
		return nil, nil, s.fail(nil)
	}
	return append(rest, '}'), samErr, nil
}

// walkSAM checks the SAM log array at the stream's position, log by log, keeping none of them.
// Only the first problem is kept; the array is still read to its end, for the structure of the
// rest of the file.
func (f *File) walkSAM(s *jsonStream) (*Error, error) {
	if c, ok := s.peek(); !ok || c != '[' {
		v := s.value()
		if string(v) == "null" {
			return nil, nil
		}
		if fault := checkJSON(v, maxRecord); fault != nil {
			return nil, s.fail(jsonError(samKey, s.offset()-int64(len(v)), fault))
		}
		return Errorf(samKey, "expected an array of objects"), nil
	}
	f.sam = s.offset()
	sr := &samReader{s: s}
	s.consume()
	ids := newBloom(f.size)
	var first *Error
	var order dateOrder
	var starts []int64
	for {
		if sr.i%samChunkLogs == 0 {
			starts = append(starts, s.offset())
		}
		var r domain.SAMActionLog
		ok, problem, err := sr.next(&r, first == nil)
		switch {
		case err != nil && first != nil:
			return first, nil // the log at fault is the better report
		case err != nil:
			return nil, err
		case !ok:
			f.logs, f.maybeTaken = sr.i, ids.twice
			f.starts = starts[:(f.logs+samChunkLogs-1)/samChunkLogs]
			f.newestFirst = order.down > order.up
			return first, nil
		case problem != nil && problem.pos != 0:
			return nil, problem // the file's JSON: reported in the file's order, as for other keys
		case problem != nil:
			first = problem
		case first == nil:
			u, _ := r.ID.Bytes()
			ids.add(u)
			order.add(&r)
		}
	}
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

// samReader reads the SAM log array's logs one by one, from a stream just inside its '['.
type samReader struct {
	s  *jsonStream
	in interner
	i  int // the index of the next log
	// end: the array's ']' has been read.
	end bool
	// entity is the last entity id found canonical: the logs of one entity come in runs.
	entity domain.ID
}

// next reads the next log into r and checks it on its own (when decode is set; otherwise it only
// finds where it ends). ok is false after the last log. problem is a problem with the log; err a
// problem with the file's structure, after which reading cannot go on.
func (sr *samReader) next(r *domain.SAMActionLog, decode bool) (ok bool, problem *Error, err error) {
	s := sr.s
	if sr.end {
		return false, nil, nil
	}
	if c, ok := s.peek(); ok && c == ']' && sr.i == 0 {
		s.consume()
		sr.end = true
		return false, nil, nil
	}
	if !decode || !sr.lean(r) {
		if problem, err = sr.careful(r, decode); err != nil {
			return false, nil, err
		}
	}
	if decode && problem == nil {
		problem = sr.check(r)
	}
	c, more := s.peek()
	if more {
		s.consume()
	}
	switch {
	case more && c == ']':
		sr.end = true
	case !more || c != ',':
		err := s.malformed(c, more, "after an array element")
		if e, ok := err.(*Error); ok {
			e.Path = at(samKey, sr.i)
		}
		return false, nil, err
	}
	sr.i++
	return true, problem, nil
}

// lean decodes the log at the stream's position when it is of the plain shape leanSAMLog reads,
// in one scan of its bytes: almost every log of a big file.
func (sr *samReader) lean(r *domain.SAMActionLog) bool {
	s := sr.s
	for {
		if end, ok := leanSAMLog(s.buf[:s.n], s.i, r, &sr.in); ok {
			s.i = end
			return true
		}
		// Not plain, or not all in the buffer yet: read more and try again only in the second case.
		if _, whole := valueEnd(s.buf[s.i:s.n]); whole || s.n-s.i > maxSAMLog || !s.fill() {
			*r = domain.SAMActionLog{}
			return false
		}
	}
}

// careful finds where the value at the stream's position ends and, if decode is set, decodes it
// by encoding/json, which names the field at fault.
func (sr *samReader) careful(r *domain.SAMActionLog, decode bool) (*Error, error) {
	s := sr.s
	s.max = maxSAMLog
	v := s.value()
	s.max = maxValue
	if errors.Is(s.err, errValueTooLarge) {
		return nil, Errorf(at(samKey, sr.i), "larger than %d bytes: not a SAM action log", maxSAMLog)
	}
	if len(v) == 0 {
		return nil, s.fail(&Error{Path: at(samKey, sr.i)})
	}
	if !decode {
		return nil, nil
	}
	if fault := checkRecord(v); fault != nil {
		return jsonError(at(samKey, sr.i), s.offset()-int64(len(v)), fault), nil
	}
	*r = domain.SAMActionLog{}
	if err := decodeStrict(v, r); err != nil {
		return fieldError(at(samKey, sr.i), v, err), nil
	}
	return nil, nil
}

// check holds a log to the rules of checker.samActionLogs, but for its id being unique, and
// makes its ids canonical.
func (sr *samReader) check(r *domain.SAMActionLog) *Error {
	if r.EntityID == sr.entity && r.EntityID != "" {
		if id, ok := canonical(r.ID); ok && strings.TrimSpace(r.Action) != "" && !r.ActionDate.IsZero() {
			r.ID = id
			return nil
		}
	}
	if id, entity, ok := validSAMLog(r); ok {
		r.ID, r.EntityID, sr.entity = id, entity, entity
		return nil
	}
	c := &checker{}
	path := at(samKey, sr.i)
	c.id(path+".id", &r.ID)
	c.id(path+".entityId", &r.EntityID)
	c.text(path+".action", r.Action)
	c.time(path+".actionDate", r.ActionDate)
	return c.err
}

// fail is the error for a problem with the file's structure: a read error if there was one. A
// problem without a text is the end of the file, where more was wanted.
func (s *jsonStream) fail(problem *Error) error {
	if s.err != nil && !errors.Is(s.err, errValueTooLarge) {
		return &Error{Problem: "cannot read the file: " + s.err.Error()}
	}
	if problem == nil {
		problem = &Error{}
	}
	if problem.Problem == "" {
		problem.Problem, problem.pos = "malformed JSON: unexpected end of the file", s.offset()+1
	}
	return problem
}

// malformed is the error for the byte c that peek found (none at the end: ok false) where the
// file's structure wanted another.
func (s *jsonStream) malformed(c byte, ok bool, context string) error {
	if !ok {
		return s.fail(nil)
	}
	return &Error{Problem: fmt.Sprintf("malformed JSON: invalid character %s %s", quoteByte(c), context), pos: s.offset() + 1}
}

// notObject says why v, the start of the file at offset start, is not an object.
func notObject(v []byte, start int64) *Error {
	if fault := checkJSON(v, maxRecord); fault != nil {
		return jsonError("", start, fault)
	}
	return &Error{Problem: "not a JSON object", pos: start + 1}
}

// samChunkLogs is how many SAM logs go to the store at a time: 25 MB of them decoded, about
// 50 MB with the store's plan of them. Fewer cost speed on a big file: each chunk's ids go into
// the ids' index in one sorted run, and a run of 50,000 into an index of millions touches nearly
// every page of it (5,000,000 logs on PostgreSQL, before migration 0006: 63 s in chunks of 50,000,
// 40 s of 200,000).
var samChunkLogs = 200_000

// streamSAMLogs reads the file's SAM logs again and imports them a chunk at a time, each log's
// references checked as it comes, and the ids the first pass found perhaps repeated counted. The
// store appends an entity's logs cheaply when they come oldest first, so a file whose logs come
// newest first (an export) goes last chunk first.
func (im *importer) streamSAMLogs() error {
	f := im.file
	order := make([]int, len(f.starts))
	for k := range order {
		order[k] = k
		if f.newestFirst {
			order[k] = len(order) - 1 - k
		}
	}
	c := &samChunks{im: im, refs: im.kinds[samKey].links[0].to, seen: make(map[[16]byte]bool, len(f.maybeTaken)),
		logs: make([]domain.SAMActionLog, 0, min(samChunkLogs, f.logs))}
	for _, k := range order {
		if err := c.importChunk(k); err != nil {
			return err
		}
	}
	return nil
}

// samChunks imports the file's SAM logs chunk by chunk.
type samChunks struct {
	im   *importer
	refs []string              // the kinds a log's entityId may name
	seen map[[16]byte]bool     // the ids of maybeTaken met so far
	last domain.ID             // the entity last found: the logs of one entity come in runs
	logs []domain.SAMActionLog // the chunk
}

// importChunk reads chunk k of the logs and imports it.
func (c *samChunks) importChunk(k int) error {
	im, f := c.im, c.im.file
	sr := f.samLogs()
	if k > 0 {
		sr = &samReader{s: newJSONStream(io.NewSectionReader(f.r, f.starts[k], f.size-f.starts[k]), maxValue), i: k * samChunkLogs}
	}
	end := min((k+1)*samChunkLogs, f.logs)
	c.logs = c.logs[:0]
	for sr.i < end {
		var r domain.SAMActionLog
		ok, problem, err := sr.next(&r, true)
		if err != nil || problem != nil || !ok {
			return errFileChanged
		}
		i := sr.i - 1
		u, _ := r.ID.Bytes()
		if f.maybeTaken[u] {
			if c.seen[u] {
				return Errorf(at(samKey, i)+".id", "duplicate id %s", r.ID)
			}
			c.seen[u] = true
		}
		if k, ok := im.deleted[samKey][r.ID]; ok {
			return Errorf(fmt.Sprintf("%s.%s[%d]", deletesKey, samKey, k),
				"%s is also a record of %s in this file: replace it or delete it, not both", r.ID, samKey)
		}
		if r.EntityID != c.last {
			if err := im.ref(at(samKey, i)+".entityId", c.refs, r.EntityID); err != nil {
				return err
			}
			c.last = r.EntityID
		}
		c.logs = append(c.logs, r)
	}
	if end == f.logs { // the last chunk: the array must end after it, as it did
		var r domain.SAMActionLog
		if ok, _, err := sr.next(&r, false); ok || err != nil {
			return errFileChanged
		}
	}
	return importSAMLogs(im, c.logs)
}

// errFileChanged: the second reading of the file found other logs than the first.
var errFileChanged = &Error{Problem: "the file changed while it was being imported"}

// samLogs reads the file's SAM logs from the start of their array.
func (f *File) samLogs() *samReader {
	s := newJSONStream(io.NewSectionReader(f.r, f.sam+1, f.size-f.sam-1), maxValue)
	return &samReader{s: s}
}

// samLogTaken names the log whose id was taken, after the import has rolled back: the first log of
// the file whose id is stored. (A log that repeats an earlier one of the file is found before the
// store sees it.)
func (f *File) samLogTaken(ctx context.Context, st *store.Store) error {
	sr := f.samLogs()
	logs := make([]domain.SAMActionLog, 0, samLogIDChunk)
	ids := make([]domain.ID, 0, samLogIDChunk)
	for done := false; !done; {
		logs, ids = logs[:0], ids[:0]
		for len(logs) < cap(logs) {
			var r domain.SAMActionLog
			ok, problem, err := sr.next(&r, true)
			if err != nil || problem != nil {
				return errFileChanged
			}
			if !ok {
				done = true
				break
			}
			logs, ids = append(logs, r), append(ids, r.ID)
		}
		stored, err := st.StoredSAMLogIDs(ctx, ids)
		if err != nil {
			return err
		}
		for k, taken := range stored {
			if taken {
				i := sr.i - len(logs) + k
				return Errorf(at(samKey, i)+".id", "duplicate id %s: already in the database", logs[k].ID)
			}
		}
	}
	return Errorf(samKey, "conflicts with a record already in the database or the file")
}
