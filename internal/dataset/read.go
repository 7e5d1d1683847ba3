package dataset

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"backoffice/internal/domain"
)

// A dataset file is read once, start to end, as a stream of JSON tokens (jsontext, the tokenizer
// of JSON v2), record by record: jsontext refuses what is not JSON, invalid UTF-8, a lone
// surrogate and a name given twice in an object, each at its byte offset; walker holds each
// record to the rules jsontext leaves to its caller (a name twice in another letter case, NUL,
// the limits of docs/dataset.md#limits) and copies it; JSON v2 decodes the copy into its record,
// naming a value of the wrong type, an unknown field, a number out of range or an impossible date
// at its offset. Every key's records are kept (they are small) but the SAM action logs': they are
// checked one by one as they stream by, counted and dropped (samlogs.go), and the import reads
// them again from the file. Nothing is held but the records kept and the one being read.

// Limits of what a dataset file may hold (docs/dataset.md#limits).
const (
	// maxText is the longest string (in characters) of any field not listed in longFields: names,
	// codes, numbers, an array's strings.
	maxText = 255
	// maxDocument is the largest merchant document, in bytes once decoded.
	maxDocument = 10 << 20
	// maxRecord is the largest record, in bytes of JSON; maxDocumentRecord a merchant document's.
	maxRecord         = 1 << 20
	maxDocumentRecord = 16 << 20
	// maxDepth is how deeply arrays and objects may nest, the key's own array counted.
	maxDepth = 16
)

// longFields are the fields whose strings may be longer than maxText, by name. A merchant note's
// body and an audit event's detail are the service's own writing (a few hundred characters): the
// limit leaves room, so that an export always imports. A document's base64 is held to the length
// of a maxDocument document's, and its decoded bytes to maxDocument (checker.merchantDocument).
var longFields = map[string]int{
	"body":          10_000, // a merchant note
	"detail":        10_000, // an audit event
	"key":           1024,   // a credential
	"token":         1024,
	"contentBase64": (maxDocument + 2) / 3 * 4,
}

// recordLimit is the largest record of a key, in bytes.
func recordLimit(key string) int64 {
	if key == "merchantDocuments" {
		return maxDocumentRecord
	}
	return maxRecord
}

// decodeOptions are JSON v2's, set to decode as encoding/json did: a name matches its field in
// any letter case (strings.EqualFold); but strictly: an unknown field is refused, not skipped.
var decodeOptions = json.JoinOptions(
	json.RejectUnknownMembers(true),
	json.MatchCaseInsensitiveNames(true),
	jsonv1.MatchCaseSensitiveDelimiter(true),
)

// File is a dataset file read by ReadFile, ready for ImportFile.
type File struct {
	ds *Dataset // every key but samActionLogs
	// again reads the file again: the SAM logs, and the place of an error.
	again io.ReaderAt
	size  int64
	// values holds where each key's value starts.
	values map[string]int64
	// logs is how many SAM logs the file holds; chunk how many go to the store at a time
	// (samChunkLogs); starts the offset of every chunk's first log; newestFirst says that the logs
	// of an entity mostly come newest first (as export writes them), and the chunks go to the
	// store last one first.
	logs        int
	chunk       int
	starts      []int64
	newestFirst bool
}

// Records counts the records of the file, its SAM logs and deletes included.
func (f *File) Records() int { return f.ds.Records() + f.logs }

// ReadFile reads and checks the dataset that r gives, once through, keeping every record in
// memory but its SAM action logs, which ImportFile reads again. again must give back each byte
// r gave, at its offset, once r has given it: the file itself, or a copy of the stream made as r
// is read. An error names the record and field, and its line and column.
func ReadFile(r io.Reader, again io.ReaderAt) (*File, error) {
	return readFile(r, again, nil)
}

// Read reads and checks a dataset as ReadFile does, with its SAM action logs. Ids come back in
// canonical (lower-case) form.
func Read(r io.Reader) (*Dataset, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, &Error{Problem: "cannot read the file: " + err.Error(), off: -1}
	}
	f, err := readFile(bytes.NewReader(b), bytes.NewReader(b), func(rd *reader) { rd.keepLogs = true })
	if err != nil {
		return nil, err
	}
	return f.ds, nil
}

// auditKey is the key of the audit events, which StreamAuditEvents hands out one by one.
const auditKey = "auditEvents"

// StreamAuditEvents reads and checks the dataset that r gives as ReadFile does, but keeps none
// of its audit events: each, checked, goes to each as it is read, in the file's order, and
// memory holds one at a time (and the ids seen, to find one given twice). each stops being
// called at the first event that breaks a rule; the file's first error is returned once it has
// been read to its end, as ReadFile would return it. again is as ReadFile's.
func StreamAuditEvents(r io.Reader, again io.ReaderAt, each func(domain.AuditEvent)) error {
	_, err := readFile(r, again, func(rd *reader) {
		rd.each = map[string]func(any){auditKey: func(v any) { each(*v.(*domain.AuditEvent)) }}
	})
	return err
}

// readFile reads the file r gives, its reader set up by setup (nil: as ReadFile reads).
func readFile(r io.Reader, again io.ReaderAt, setup func(*reader)) (*File, error) {
	f := &File{ds: &Dataset{}, again: again, values: map[string]int64{}, chunk: samChunkLogs}
	rd := newReader(r, f)
	if setup != nil {
		setup(rd)
	}
	err := rd.read()
	f.size = rd.lim.read
	if err != nil {
		return nil, f.place(rd.readError(err))
	}
	return f, nil
}

// reader reads one file.
type reader struct {
	dec  *jsontext.Decoder
	lim  *budget
	f    *File
	kind map[string]*kind
	c    *checker
	// keepLogs: the SAM logs are kept in the Dataset (Read), not only checked.
	keepLogs bool
	// each, by key, takes the key's records one by one instead of the Dataset (see kind.stream).
	each map[string]func(any)
	w    walker
}

func newReader(r io.Reader, f *File) *reader {
	lim := &budget{r: bufio.NewReaderSize(r, 256<<10)}
	rd := &reader{dec: jsontext.NewDecoder(lim), lim: lim, f: f, kind: map[string]*kind{},
		c: &checker{seen: map[string]map[domain.ID]bool{}}}
	for _, k := range kinds() {
		rd.kind[k.key] = &k
	}
	rd.w.dec, rd.w.lim = rd.dec, lim
	return rd
}

// readError is err as the file's problem: a read error of the file's own says so.
func (rd *reader) readError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Problem: "cannot read the file: " + err.Error(), off: -1}
}

// read reads the file's object, key by key.
func (rd *reader) read() error {
	dec := rd.dec
	rd.lim.from(0, maxRecord)
	tok, err := dec.ReadToken()
	switch {
	case err == io.EOF:
		return &Error{Problem: "not a JSON object: the file is empty", off: -1}
	case err != nil:
		return rd.w.syntax(err, nil)
	case tok.Kind() != '{':
		return errorAt(0, "", "not a JSON object")
	}
	for {
		at := nextOffset(dec)
		rd.lim.from(at, maxRecord)
		kind, err := peek(dec)
		if err != nil {
			return rd.w.syntax(err, nil)
		}
		if kind == '}' {
			break
		}
		tok, err := dec.ReadToken()
		if err != nil {
			return rd.w.syntax(err, nil)
		}
		key := tok.String()
		if len(key) > maxText {
			return errorAt(at, "", "a key longer than %d characters", maxText)
		}
		if err := rd.value(key); err != nil {
			return err
		}
	}
	if _, err := dec.ReadToken(); err != nil { // '}'
		return rd.w.syntax(err, nil)
	}
	at := nextOffset(dec)
	rd.lim.from(at, maxRecord)
	switch _, err := dec.ReadToken(); {
	case errors.Is(err, errTooLarge):
		return rd.w.syntax(err, nil)
	case err != io.EOF:
		return errorAt(at, "", "unexpected data after the JSON object")
	}
	rd.c.deletes(kinds(), rd.f.ds)
	if rd.c.err != nil {
		return rd.c.err
	}
	return nil
}

// value reads the value of key: its records, or the ids to delete; null counts as absent.
func (rd *reader) value(key string) error {
	dec := rd.dec
	at := nextOffset(dec)
	rd.f.values[key] = at
	kind, err := peek(dec)
	if err != nil {
		return rd.w.syntax(err, []step{{name: key}})
	}
	k, known := rd.kind[key]
	switch {
	case !known && key != deletesKey:
		return errorAt(at, key, "unknown key (known keys: %s)", strings.Join(keys(), ", "))
	case kind == 'n':
		_, err := dec.ReadToken()
		return err
	case key == deletesKey && kind != '{':
		return errorAt(at, key, "expected an object whose keys name kinds of records, each an array of ids")
	case key == deletesKey:
		return rd.deletes()
	case kind != '[':
		return errorAt(at, key, "expected an array of objects")
	case key == samKey:
		return rd.samLogs()
	case rd.each[key] != nil && k.stream != nil:
		return k.stream(rd, rd.each[key])
	}
	if err := k.decode(rd, rd.f.ds); err != nil {
		return err
	}
	k.check(rd.c, rd.f.ds)
	if rd.c.err != nil {
		return rd.c.err
	}
	return nil
}

// readRecords reads the array of key's records at the decoder's position into dst.
func readRecords[T any](rd *reader, key string, dst *[]T) error {
	if _, err := rd.dec.ReadToken(); err != nil { // '['
		return rd.w.syntax(err, []step{{name: key}})
	}
	for i := 0; ; i++ {
		var r T
		done, err := rd.record(key, i, &r)
		if err != nil || done {
			return err
		}
		*dst = append(*dst, r)
	}
}

// streamRecords reads the array of key's records at the decoder's position as readRecords does,
// but keeps none: each record is checked as it comes (check, as the key's check would) and, while
// every one so far has kept the rules, handed to each. Past a record that breaks a rule the rest
// are still read, so that the error is the one readRecords and then the key's check would give: a
// record that cannot be read first, else the first record that breaks a rule.
func streamRecords[T any](rd *reader, key string, check func(c *checker, i int, r *T), each func(any)) error {
	if _, err := rd.dec.ReadToken(); err != nil { // '['
		return rd.w.syntax(err, []step{{name: key}})
	}
	for i := 0; ; i++ {
		var r T
		done, err := rd.record(key, i, &r)
		switch {
		case err != nil:
			return err
		case done && rd.c.err != nil: // a *Error: a nil one is no error
			return rd.c.err
		case done:
			return nil
		}
		check(rd.c, i, &r)
		if rd.c.err == nil {
			each(&r)
		}
	}
}

// record reads record i of key into v; done reports the end of the array instead.
func (rd *reader) record(key string, i int, v any) (done bool, err error) {
	dec := rd.dec
	start := nextOffset(dec)
	limit := recordLimit(key)
	rd.lim.from(start, limit)
	path := []step{{name: key}, {index: i}}
	kind, err := peek(dec)
	switch {
	case err != nil:
		return false, rd.w.syntax(err, path)
	case kind == ']':
		_, err := dec.ReadToken()
		return true, err
	case kind == 'n':
		return false, errorAt(start, render(path), "expected an object, got null")
	case kind != '{':
		return false, errorAt(start, render(path), "expected an object, got %s", kindName(kind))
	}
	raw, err := rd.w.record(path, start, limit)
	if err != nil {
		return false, err
	}
	return false, decodeRecord(raw, start, path, v)
}

// decodeRecord decodes the record raw, which starts at offset start of the file and is at path,
// into v. raw is the walker's copy, without the file's white space: an error names the value by
// its path, which finds its place in the file.
func decodeRecord(raw []byte, start int64, path []step, v any) error {
	err := json.Unmarshal(raw, v, decodeOptions)
	if err == nil {
		return nil
	}
	var se *json.SemanticError
	if !errors.As(err, &se) {
		return errorAt(start, render(path), "%v", err)
	}
	at := append(path[:len(path):len(path)], pointerSteps(raw, se.JSONPointer)...)
	return Errorf(render(at), "%s", semanticProblem(se))
}

// semanticProblem says what JSON v2 found wrong with a value, in the file's words.
func semanticProblem(se *json.SemanticError) string {
	got := kindName(se.JSONKind)
	if se.JSONValue != nil {
		got = string(se.JSONValue)
	}
	switch {
	case errors.Is(se.Err, json.ErrUnknownName):
		return "unknown field"
	case se.GoType == nil:
		return strings.TrimPrefix(se.Error(), "json: ")
	case se.GoType.String() == "time.Time" && se.JSONKind == '"':
		return fmt.Sprintf("not an RFC 3339 date-time (%v)", se.Err)
	case se.GoType.String() == "time.Time":
		return fmt.Sprintf("expected an RFC 3339 date-time, got %s", got)
	case se.JSONKind == '0' && isInteger(se.GoType.Kind().String()):
		return fmt.Sprintf("expected a whole number from %d to %d, got %s", int64(-1<<63), int64(1<<63-1), got)
	case se.Err != nil && se.GoType.Kind().String() == "slice" && se.JSONKind == '"':
		return fmt.Sprintf("expected standard base64: %v", se.Err)
	case se.Err != nil:
		return fmt.Sprintf("cannot decode %s: %v", got, se.Err)
	}
	return fmt.Sprintf("expected %s, got %s", jsonType(se.GoType.Kind().String()), kindName(se.JSONKind))
}

func isInteger(goKind string) bool {
	return strings.HasPrefix(goKind, "int") || strings.HasPrefix(goKind, "uint")
}

func jsonType(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	default:
		return "a number"
	}
}

// kindName names a kind of JSON value.
func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "boolean"
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "nothing"
}

// pointerSteps is the path of the value at ptr within raw: a token is an array's index or an
// object's name as the value it steps into says.
func pointerSteps(raw []byte, ptr jsontext.Pointer) []step {
	var steps []step
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	for tok := range ptr.Tokens() {
		kind := dec.PeekKind()
		if kind == '[' {
			var i int
			fmt.Sscan(tok, &i)
			steps = append(steps, step{index: i})
		} else {
			steps = append(steps, step{name: tok})
		}
		if _, ok := descend(dec, steps[len(steps)-1:]); !ok {
			break
		}
	}
	return steps
}

// descend moves dec from the start of a value to the value that steps name within it, and says
// how far in that is (the decoder's offset); ok is false when there is no such value, dec then
// at the last value that there is.
func descend(dec *jsontext.Decoder, steps []step) (off int64, ok bool) {
	for _, s := range steps {
		off = nextOffset(dec)
		switch kind := dec.PeekKind(); {
		case kind == '[' && s.name == "":
			dec.ReadToken()
			for i := 0; i < s.index; i++ {
				if dec.PeekKind() == ']' || dec.SkipValue() != nil {
					return off, false
				}
			}
			if dec.PeekKind() == ']' {
				return off, false
			}
		case kind == '{' && s.name != "":
			dec.ReadToken()
			for {
				if dec.PeekKind() != '"' {
					return off, false
				}
				name, err := dec.ReadToken()
				if err != nil {
					return off, false
				}
				if strings.EqualFold(name.String(), s.name) {
					break
				}
				if dec.SkipValue() != nil {
					return off, false
				}
			}
		default:
			return off, false
		}
	}
	return nextOffset(dec), true
}

// place gives err its line and column in the file.
func (f *File) place(err error) error {
	return place(f.again, err, f.find)
}

// find is where the value at steps is in the file (or the nearest value on the way to it).
func (f *File) find(steps []step) (int64, bool) {
	start, ok := f.values[steps[0].name]
	if !ok {
		return 0, false
	}
	rest := steps[1:]
	if steps[0].name == samKey && len(rest) > 0 && rest[0].name == "" && len(f.starts) > 0 {
		// A log: from the start of its chunk, not of the array.
		k := min(rest[0].index/f.chunk, len(f.starts)-1)
		start = f.starts[k]
		rest = append([]step{{index: rest[0].index - k*f.chunk}}, rest[1:]...)
		return f.findFrom(io.MultiReader(strings.NewReader("["), io.NewSectionReader(f.again, start, f.size-start)), start-1, rest)
	}
	return f.findFrom(io.NewSectionReader(f.again, start, f.size-start), start, rest)
}

func (f *File) findFrom(r io.Reader, base int64, steps []step) (int64, bool) {
	off, _ := descend(jsontext.NewDecoder(r), steps)
	return base + off, true
}

// peek is the kind of the next token; an error when there is none.
func peek(dec *jsontext.Decoder) (jsontext.Kind, error) {
	if kind := dec.PeekKind(); kind != 0 {
		return kind, nil
	}
	_, err := dec.ReadToken()
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return 0, err
}

// nextOffset is where the next token starts: past white space and the comma or colon before it.
func nextOffset(dec *jsontext.Decoder) int64 {
	dec.PeekKind()
	b := dec.UnreadBuffer()
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r' || b[i] == ',' || b[i] == ':') {
		i++
	}
	return dec.InputOffset() + int64(i)
}

// budget is the decoder's reader, which lets it read only so far past the start of the value it
// is reading: a value too large (a record past its limit, a string of a gigabyte) fails in the
// memory of its limit, not of its size.
type budget struct {
	r io.Reader
	// read is how many bytes it has given; end the offset it gives none past.
	read, end int64
}

// errTooLarge is the error of a read past the budget.
var errTooLarge = errors.New("dataset: a value past its limit")

// budgetSlack is how far past a value's limit the decoder may read: a buffer's worth, so that
// what follows a value that keeps its limit is read in the same system call.
const budgetSlack = 64 << 10

// from starts the value at offset off, of at most limit bytes.
func (b *budget) from(off, limit int64) { b.end = off + limit + budgetSlack }

func (b *budget) Read(p []byte) (int, error) {
	room := b.end - b.read
	if room <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

// walker reads a value token by token, holding it to the rules jsontext leaves to its caller,
// and copies it into buf for JSON v2 to decode.
type walker struct {
	dec *jsontext.Decoder
	lim *budget
	// base is the offset in the file of the decoder's offset 0.
	base  int64
	buf   []byte
	path  []step
	quote []byte // a string unquoted
	// rec is the record being read and its start and limit, for the error of a record too large.
	rec         []step
	start, size int64
}

// record reads the record at path, which starts at start, of at most limit bytes, and returns
// its JSON (good until the next call).
func (w *walker) record(path []step, start, limit int64) ([]byte, error) {
	w.buf, w.path, w.rec, w.start, w.size = w.buf[:0], append(w.path[:0], path...), path, start, limit
	defer func() { w.rec = nil }()
	if err := w.value(1, ""); err != nil {
		return nil, err
	}
	if end := w.base + w.dec.InputOffset(); end-start > limit {
		return nil, errorAt(start, render(path), "a record larger than %d MiB", limit>>20)
	}
	return w.buf, nil
}

// value reads the value at depth (the key's array is depth 0) of the field named field.
func (w *walker) value(depth int, field string) error {
	dec := w.dec
	at := w.base + nextOffset(dec)
	kind, err := peek(dec)
	if err != nil {
		return w.syntax(err, w.path)
	}
	switch kind {
	case '{', '[':
		if depth >= maxDepth {
			return errorAt(at, render(w.path), "nested more than %d deep", maxDepth)
		}
		if _, err := dec.ReadToken(); err != nil {
			return w.syntax(err, w.path)
		}
		w.buf = append(w.buf, byte(kind))
		if kind == '{' {
			err = w.members(depth)
		} else {
			err = w.elements(depth, field)
		}
		if err != nil {
			return err
		}
		if _, err := dec.ReadToken(); err != nil {
			return w.syntax(err, w.path)
		}
		w.buf = append(w.buf, byte(kind)+2) // '}' or ']'
		return nil
	case '"':
		raw, err := dec.ReadValue()
		if err != nil {
			return w.string(err, at, field)
		}
		if err := w.checkString(raw, at, field); err != nil {
			return err
		}
		w.buf = append(w.buf, raw...)
		return nil
	}
	raw, err := dec.ReadValue()
	if err != nil {
		return w.syntax(err, w.path)
	}
	w.buf = append(w.buf, raw...)
	return nil
}

func (w *walker) members(depth int) error {
	dec := w.dec
	var names nameSet
	for first := true; ; first = false {
		at := w.base + nextOffset(dec)
		kind, err := peek(dec)
		if err != nil {
			return w.syntax(err, w.path)
		}
		if kind == '}' {
			return nil
		}
		raw, err := dec.ReadValue() // the name
		if err != nil {
			return w.syntax(err, w.path)
		}
		name := string(w.unquote(raw))
		w.path = append(w.path, step{name: name})
		if !names.add(name) {
			return errorAt(at, render(w.path), "duplicate field: a name may appear once in an object, in any letter case")
		}
		if err := w.checkString(raw, at, ""); err != nil {
			return err
		}
		if !first {
			w.buf = append(w.buf, ',')
		}
		w.buf = append(append(w.buf, raw...), ':')
		if err := w.value(depth+1, name); err != nil {
			return err
		}
		w.path = w.path[:len(w.path)-1]
	}
}

// elements reads an array's elements; an array's strings are held to its field's limit.
func (w *walker) elements(depth int, field string) error {
	dec := w.dec
	for i := 0; ; i++ {
		kind, err := peek(dec)
		if err != nil {
			return w.syntax(err, w.path)
		}
		if kind == ']' {
			return nil
		}
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		w.path = append(w.path, step{index: i})
		if err := w.value(depth+1, field); err != nil {
			return err
		}
		w.path = w.path[:len(w.path)-1]
	}
}

// blankRun reports whether the decoder stopped in white space between two values (its budget
// spent on padding, not on a value) and where that white space starts: past the comma or colon
// before it, if any.
func blankRun(dec *jsontext.Decoder) (int64, bool) {
	b := dec.UnreadBuffer()
	start := 0
	for i, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
		case ',', ':':
			start = i + 1
		default:
			return 0, false
		}
	}
	return dec.InputOffset() + int64(start), true
}

// unquote is the string raw decoded (good until the next call).
func (w *walker) unquote(raw []byte) []byte {
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1]
	}
	w.quote, _ = jsontext.AppendUnquote(w.quote[:0], raw) // jsontext has checked it
	return w.quote
}

// checkString holds the string raw (quoted) at offset at to its field's limit, and refuses NUL,
// which PostgreSQL cannot keep in a text.
func (w *walker) checkString(raw []byte, at int64, field string) error {
	s := w.unquote(raw)
	if bytes.IndexByte(s, 0) >= 0 {
		return errorAt(at, render(w.path), `a NUL character (\u0000) in a string, which the database cannot keep`)
	}
	limit := fieldLimit(field)
	if len(s) > limit {
		if n := utf8.RuneCount(s); n > limit {
			return errorAt(at, render(w.path), "longer than %d characters (%d)", limit, n)
		}
	}
	return nil
}

// fieldLimit is the longest string the field named field may hold, in characters.
func fieldLimit(field string) int {
	if n, ok := longFields[field]; ok {
		return n
	}
	return maxText
}

// string is the error of a string that could not be read whole: one that its budget stopped is
// longer than its field's limit, if it is sure to be, or else its record is too large.
func (w *walker) string(err error, at int64, field string) error {
	if !errors.Is(err, errTooLarge) {
		return w.syntax(err, w.path)
	}
	if limit := fieldLimit(field); w.lim.end-at > 6*int64(limit)+2 { // a \uXXXX escape a character, and the quotes
		return errorAt(at, render(w.path), "longer than %d characters", limit)
	}
	return w.syntax(err, w.path)
}

// syntax is the error of a token that jsontext refused (or could not read), at path.
func (w *walker) syntax(err error, path []step) error {
	var se *jsontext.SyntacticError
	switch {
	case errors.Is(err, errTooLarge) && w.rec != nil:
		return errorAt(w.start, render(w.rec), "a record larger than %d MiB", w.size>>20)
	case errors.Is(err, errTooLarge):
		if off, ok := blankRun(w.dec); ok {
			e := errorAt(w.base+off, render(path), "more than %d MiB of white space in a row: remove the padding (at most %[1]d MiB of white space may come between two values)", maxRecord>>20)
			e.blank = true
			return e
		}
		return errorAt(w.base+w.dec.InputOffset(), render(path), "a value larger than %d MiB", maxRecord>>20)
	case !errors.As(err, &se):
		if err == io.ErrUnexpectedEOF {
			return errorAt(w.base+w.lim.read, render(path), "malformed JSON: unexpected end of the file")
		}
		return err
	}
	at := w.base + se.ByteOffset
	switch {
	case errors.Is(se.Err, jsontext.ErrDuplicateName):
		word := "field"
		if len(path) == 0 || len(path) == 1 && path[0].name == deletesKey {
			word = "key"
		}
		p := render(append(path[:len(path):len(path)], step{name: se.JSONPointer.LastToken()}))
		if word == "key" {
			return errorAt(at, p, "duplicate key: the file may hold each key once")
		}
		return errorAt(at, p, "duplicate field: a name may appear once in an object, in any letter case")
	case errors.Is(se.Err, io.ErrUnexpectedEOF):
		return errorAt(at, render(path), "malformed JSON: unexpected end of the file")
	}
	return errorAt(at, render(path), "malformed JSON: %v", se.Err)
}

// nameSet holds an object's names, to find one given twice. A name matches a field whatever its
// letter case, so names that differ only in case are the same name. A set of a few names is a
// list; past that, a map.
type nameSet struct {
	list []string
	m    map[string]bool
}

// add reports false when name is in the set already.
func (s *nameSet) add(name string) bool {
	if s.m != nil {
		key := strings.ToLower(name)
		if s.m[key] {
			return false
		}
		s.m[key] = true
		return true
	}
	for _, n := range s.list {
		if strings.EqualFold(n, name) {
			return false
		}
	}
	s.list = append(s.list, name)
	if len(s.list) > 16 {
		s.m = make(map[string]bool, 2*len(s.list))
		for _, n := range s.list {
			s.m[strings.ToLower(n)] = true
		}
	}
	return true
}

// deletes reads the deletes object: its keys name kinds of records, each holding an array of ids.
func (rd *reader) deletes() error {
	dec := rd.dec
	dec.ReadToken() // '{'
	m := map[string][]domain.ID{}
	for {
		at := nextOffset(dec)
		rd.lim.from(at, maxRecord)
		kind, err := peek(dec)
		if err != nil {
			return rd.w.syntax(err, []step{{name: deletesKey}})
		}
		if kind == '}' {
			dec.ReadToken()
			break
		}
		tok, err := dec.ReadToken()
		if err != nil {
			return rd.w.syntax(err, []step{{name: deletesKey}})
		}
		key := tok.String()
		if len(key) > maxText {
			return errorAt(at, deletesKey, "a key longer than %d characters", maxText)
		}
		path := []step{{name: deletesKey}, {name: key}}
		at = nextOffset(dec)
		switch kind, err := peek(dec); {
		case err != nil:
			return rd.w.syntax(err, path)
		case kind == 'n':
			dec.ReadToken()
			m[key] = nil
			continue
		case kind != '[':
			return errorAt(at, render(path), "expected an array of ids")
		}
		dec.ReadToken() // '['
		ids := []domain.ID{}
		for i := 0; ; i++ {
			at := nextOffset(dec)
			rd.lim.from(at, maxRecord)
			kind, err := peek(dec)
			switch {
			case err != nil:
				return rd.w.syntax(err, path)
			case kind == ']':
				dec.ReadToken()
			case kind != '"':
				return errorAt(at, render(path), "expected an array of ids")
			}
			if kind == ']' {
				break
			}
			raw, err := rd.w.record(append(path[:2:2], step{index: i}), at, maxRecord)
			if err != nil {
				return err
			}
			ids = append(ids, domain.ID(rd.w.unquote(raw)))
		}
		m[key] = ids
	}
	rd.f.ds.Deletes = m
	return nil
}
