package dataset

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// encoding/json decodes what it cannot keep: a name given twice counts as its last value (and
// names match fields whatever their letter case), invalid UTF-8 and lone surrogates become U+FFFD,
// and a string may be of any length. checkJSON reads a value's bytes first and refuses all of
// that, naming the place, so that what the decoder then gives is exactly what the file says. It is
// one scan of the bytes, allocating only for objects' names; the import's SAM logs of the plain
// shape leanSAMLog reads (printable ASCII, no escapes, each name once) do not need it.
//
// BenchmarkImportJSON measures it beside the well-kept equivalents
// (docs/performance.md#the-imports-json): encoding/json's Decoder.Token making the same checks is
// 7.8× slower and cannot see a lone surrogate (it comes back as U+FFFD). JSON v2's jsontext refuses invalid UTF-8, lone surrogates
// and exact repeats itself; with the checks it leaves to its caller (names in any case, NUL,
// limits, depth) it is 1.8× slower, and Go 1.26 builds it only with GOEXPERIMENT=jsonv2 (as
// github.com/go-json-experiment/json it is a new dependency). Once it is in the default build,
// this scanner is the first thing to rebuild on it.

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
// limit leaves room, so that an export always imports.
var longFields = map[string]int{
	"body":          10_000, // a merchant note
	"detail":        10_000, // an audit event
	"key":           1024,   // a credential
	"token":         1024,
	"contentBase64": (maxDocument + 2) / 3 * 4,
}

// recordLimit is the largest record of a key, in bytes.
func recordLimit(key string) int {
	if key == "merchantDocuments" {
		return maxDocumentRecord
	}
	return maxRecord
}

// jsonFault is what checkJSON found wrong: where (an offset into the value, and the path within
// it) and what.
type jsonFault struct {
	off     int
	path    string
	problem string
}

// jsonChecker walks one value. path holds the names and indices down to where it is; it is
// rendered only for a fault.
type jsonChecker struct {
	b         []byte
	i         int
	path      []pathStep
	maxRecord int
	// record: b is a record (a SAM log read on its own), not a key's value.
	record bool
	fault  *jsonFault
	// ends, when not 0, asks for the path of the innermost value that ends at or after it and
	// starts before it, in found (see valuePath); name, when not "", for the path of the first
	// member of that name (see namePath).
	ends    int
	member  string
	members int // how many members named member were met
	found   *string
}

// pathStep is a name (an object's) or, when name is empty, an index (an array's).
type pathStep struct {
	name  string
	index int
}

// checkJSON checks that b is one JSON value, all of it, that the import can keep exactly: no name
// twice in an object (in any letter case), valid UTF-8 and no lone surrogate or NUL in a string,
// strings within their field's limit, records (the elements of the value when it is an array)
// within maxRecord bytes, nesting within maxDepth.
func checkJSON(b []byte, maxRecord int) *jsonFault {
	return (&jsonChecker{b: b, maxRecord: maxRecord}).whole()
}

// whole checks the value that b must be, and nothing after it.
func (c *jsonChecker) whole() *jsonFault {
	c.value(0)
	if c.fault == nil && c.space() < len(c.b) {
		c.fail(c.i, "malformed JSON: invalid character %s after the value", quoteByte(c.b[c.i]))
	}
	return c.fault
}

// checkRecord is checkJSON for one record read on its own.
func checkRecord(b []byte) *jsonFault {
	return (&jsonChecker{b: b, maxRecord: len(b), record: true}).whole()
}

// valuePath is the path, within the record b, of the value that ends at offset end (as
// encoding/json's type errors give it): "" for the record itself.
func valuePath(b []byte, end int) string {
	var found string
	c := &jsonChecker{b: b, maxRecord: len(b), record: true, ends: end, found: &found}
	c.value(0)
	return found
}

// namePath is the path, within the record b, of the object member named name, as encoding/json
// names an unknown field (without saying where); ok is false unless there is exactly one (the
// name may be a field at one level and unknown at another).
func namePath(b []byte, name string) (path string, ok bool) {
	c := &jsonChecker{b: b, maxRecord: len(b), record: true, member: name, found: &path}
	c.value(0)
	return path, c.members == 1
}

func (c *jsonChecker) fail(off int, format string, args ...any) {
	if c.fault == nil {
		c.fault = &jsonFault{off: off, path: c.render(), problem: fmt.Sprintf(format, args...)}
	}
}

// render writes path in the import's style: partners[0].name, a name that is not a plain word
// quoted in brackets.
func (c *jsonChecker) render() string {
	var s strings.Builder
	for _, p := range c.path {
		switch {
		case p.name == "":
			s.WriteString("[" + strconv.Itoa(p.index) + "]")
		case plainName(p.name):
			s.WriteString("." + p.name)
		default:
			s.WriteString("[" + strconv.Quote(p.name) + "]")
		}
	}
	return s.String()
}

func plainName(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// space skips white space and returns the index of the next byte.
func (c *jsonChecker) space() int {
	c.i = skipSpace(c.b, c.i)
	return c.i
}

// end reports the end of the bytes where more was wanted.
func (c *jsonChecker) end() {
	c.fail(len(c.b), "malformed JSON: unexpected end of the file")
}

func (c *jsonChecker) value(depth int) {
	if c.space() >= len(c.b) {
		c.end()
		return
	}
	if c.ends > 0 {
		defer c.note(c.i)
	}
	switch ch := c.b[c.i]; {
	case ch == '{' || ch == '[':
		if depth >= maxDepth {
			c.fail(c.i, "nested more than %d deep", maxDepth)
			return
		}
		if ch == '{' {
			c.object(depth)
		} else {
			c.array(depth)
		}
	case ch == '"':
		c.str(c.limit())
	case ch == '-' || ch >= '0' && ch <= '9':
		c.number()
	case ch == 't':
		c.literal("true")
	case ch == 'f':
		c.literal("false")
	case ch == 'n':
		c.literal("null")
	default:
		c.fail(c.i, "malformed JSON: invalid character %s looking for the beginning of a value", quoteByte(ch))
	}
}

// note records the path of the value that started at start, if it is the first to end after
// c.ends (values end innermost first).
func (c *jsonChecker) note(start int) {
	if start < c.ends && c.i >= c.ends && c.ends > 0 {
		*c.found, c.ends = c.render(), 0
	}
}

// limit is the longest string the field being read may hold: the nearest name on the path says.
func (c *jsonChecker) limit() int {
	for k := len(c.path) - 1; k >= 0; k-- {
		if name := c.path[k].name; name != "" {
			if n, ok := longFields[name]; ok {
				return n
			}
			break
		}
	}
	return maxText
}

func (c *jsonChecker) object(depth int) {
	c.i++ // '{'
	if c.space() < len(c.b) && c.b[c.i] == '}' {
		c.i++
		return
	}
	var names nameSet
	for {
		if !c.at('"', "looking for the beginning of a name") {
			return
		}
		start := c.i
		name, ok := c.name()
		if !ok {
			return
		}
		c.path = append(c.path, pathStep{name: name})
		if name == c.member && c.member != "" {
			*c.found, c.members = c.render(), c.members+1
		}
		if !names.add(name) {
			c.fail(start, "duplicate %s: a name may appear once in an object, in any letter case", c.nameWord())
			return
		}
		if !c.at(':', "after a name") {
			return
		}
		c.i++
		c.value(depth + 1)
		if !c.next('}', "after a name's value") {
			return
		}
	}
}

// next reads what follows an element of an array or object (whose path is still the last step):
// a comma, or the closing bracket, which ends it (and then next reports false).
func (c *jsonChecker) next(closing byte, context string) bool {
	defer func() { c.path = c.path[:len(c.path)-1] }()
	switch {
	case c.fault != nil:
		return false
	case c.space() >= len(c.b):
		c.end()
		return false
	case c.b[c.i] == ',':
		c.i++
		return true
	case c.b[c.i] == closing:
		c.i++
		return false
	}
	c.fail(c.i, "malformed JSON: invalid character %s %s", quoteByte(c.b[c.i]), context)
	return false
}

// at reports whether the next byte past white space is want, naming a fault when it is not.
func (c *jsonChecker) at(want byte, context string) bool {
	switch {
	case c.space() >= len(c.b):
		c.end()
		return false
	case c.b[c.i] != want:
		c.fail(c.i, "malformed JSON: invalid character %s %s", quoteByte(c.b[c.i]), context)
		return false
	}
	return true
}

// nameWord is what the path's last name is called: a key of the file (or of deletes), or a field
// of a record.
func (c *jsonChecker) nameWord() string {
	for _, p := range c.path[:len(c.path)-1] {
		if p.name == "" {
			return "field"
		}
	}
	if c.record {
		return "field"
	}
	return "key"
}

func (c *jsonChecker) array(depth int) {
	c.i++ // '['
	if c.space() < len(c.b) && c.b[c.i] == ']' {
		c.i++
		return
	}
	for k := 0; ; k++ {
		c.path = append(c.path, pathStep{index: k})
		start := c.space()
		c.value(depth + 1)
		if depth == 0 && c.fault == nil && c.i-start > c.maxRecord {
			c.fail(start, "a record larger than %d MiB", c.maxRecord>>20)
		}
		if !c.next(']', "after an array element") {
			return
		}
	}
}

// name reads an object's name, decoded.
func (c *jsonChecker) name() (string, bool) {
	start := c.i
	escaped := c.str(maxText)
	if c.fault != nil {
		return "", false
	}
	raw := c.b[start:c.i]
	if !escaped {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	_ = json.Unmarshal(raw, &s) // checked already
	return s, true
}

// str checks the string at c.i, of at most limit characters, and reports whether it holds an
// escape.
func (c *jsonChecker) str(limit int) (escaped bool) {
	start := c.i
	c.i++ // '"'
	chars := 0
	for c.i < len(c.b) {
		ch := c.b[c.i]
		switch {
		case ch == '"':
			c.i++
			if chars > limit {
				c.fail(start, "longer than %d characters (%d)", limit, chars)
			}
			return escaped
		case ch < 0x20:
			c.fail(c.i, "malformed JSON: a control character (%s) in a string: write it as an escape", quoteByte(ch))
			return escaped
		case ch == '\\':
			escaped = true
			if !c.escape() {
				return escaped
			}
		case ch < utf8.RuneSelf:
			c.i++
		default:
			r, size := utf8.DecodeRune(c.b[c.i:])
			if r == utf8.RuneError && size == 1 {
				c.fail(c.i, "invalid UTF-8 (byte 0x%02x): the file must be UTF-8", ch)
				return escaped
			}
			c.i += size
		}
		chars++
	}
	c.end()
	return escaped
}

// escape checks the escape at c.i: a \u escape must name a character, a surrogate pair whole, and
// not NUL, which PostgreSQL cannot keep in a text.
func (c *jsonChecker) escape() bool {
	start := c.i
	if c.i+1 >= len(c.b) {
		c.end()
		return false
	}
	switch c.b[c.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		c.i += 2
		return true
	case 'u':
	default:
		c.fail(c.i, "malformed JSON: invalid escape %s in a string", quoteByte(c.b[c.i+1]))
		return false
	}
	r, ok := c.hex4()
	switch {
	case !ok:
		return false
	case r == 0:
		c.fail(start, `a NUL character (\u0000) in a string, which the database cannot keep`)
		return false
	case r >= 0xdc00 && r <= 0xdfff:
		c.fail(start, "a lone surrogate (\\u%04x) in a string: not a character", r)
		return false
	case r >= 0xd800 && r <= 0xdbff:
		low, ok := rune(0), c.i+1 < len(c.b) && c.b[c.i] == '\\' && c.b[c.i+1] == 'u'
		if ok {
			low, ok = c.hex4()
		}
		if c.fault == nil && !(ok && low >= 0xdc00 && low <= 0xdfff) {
			c.fail(start, "a lone surrogate (\\u%04x) in a string: not a character", r)
		}
		return c.fault == nil
	}
	return true
}

// hex4 reads the \uXXXX at c.i.
func (c *jsonChecker) hex4() (rune, bool) {
	if c.i+6 > len(c.b) {
		c.end()
		return 0, false
	}
	v, err := strconv.ParseUint(string(c.b[c.i+2:c.i+6]), 16, 16)
	if err != nil {
		c.fail(c.i, "malformed JSON: invalid \\u escape in a string")
		return 0, false
	}
	c.i += 6
	return rune(v), true
}

// number checks a number by JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (c *jsonChecker) number() {
	b := c.b
	if b[c.i] == '-' {
		c.i++
	}
	switch {
	case c.i < len(b) && b[c.i] == '0':
		c.i++
	case !c.digits():
		return
	}
	if c.i < len(b) && b[c.i] == '.' {
		c.i++
		if !c.digits() {
			return
		}
	}
	if c.i < len(b) && (b[c.i] == 'e' || b[c.i] == 'E') {
		c.i++
		if c.i < len(b) && (b[c.i] == '+' || b[c.i] == '-') {
			c.i++
		}
		c.digits()
	}
}

// digits reads one digit or more.
func (c *jsonChecker) digits() bool {
	start := c.i
	for c.i < len(c.b) && c.b[c.i] >= '0' && c.b[c.i] <= '9' {
		c.i++
	}
	switch {
	case c.i > start:
		return true
	case c.i == len(c.b):
		c.end()
	default:
		c.fail(c.i, "malformed JSON: invalid character %s in a number", quoteByte(c.b[c.i]))
	}
	return false
}

func (c *jsonChecker) literal(word string) {
	for k := 0; k < len(word); k++ {
		switch {
		case c.i+k >= len(c.b):
			c.end()
			return
		case c.b[c.i+k] != word[k]:
			c.fail(c.i+k, "malformed JSON: invalid character %s in literal %s", quoteByte(c.b[c.i+k]), word)
			return
		}
	}
	c.i += len(word)
}

// quoteByte shows a byte in an error: a character, or its hex value when it is not printable ASCII.
func quoteByte(b byte) string {
	if b >= 0x20 && b < 0x7f {
		return strconv.QuoteRune(rune(b))
	}
	return fmt.Sprintf("0x%02x", b)
}

// nameSet holds an object's names, to find one given twice. encoding/json matches a name to a
// field whatever its letter case, so names that differ only in case are the same name. A set of
// a few names is a list; past that, a map.
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
