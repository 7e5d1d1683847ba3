package deviceparams

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// FieldError names the JSON field that is wrong and what is wrong with it.
// Path is relative to the value that was parsed (`tips.presetsPercent[2]`),
// so that a caller holding the value inside a larger document can put its own
// location in front with Under.
type FieldError struct {
	Path    string
	Problem string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Problem
	}
	return e.Path + ": " + e.Problem
}

// Under returns the error with prefix put in front of its path, for a caller
// that parsed a value found at prefix (`fileBuilds[3].settings`).
func (e *FieldError) Under(prefix string) *FieldError {
	return &FieldError{Path: joinPath(prefix, e.Path), Problem: e.Problem}
}

func joinPath(parent, child string) string {
	switch {
	case parent == "":
		return child
	case child == "":
		return parent
	case strings.HasPrefix(child, "["):
		return parent + child
	}
	return parent + "." + child
}

// reader decodes the fields of one JSON object. It keeps only the first
// error, shared with the readers of nested objects, so that parse functions
// read every field in documented order without checking after each one, and
// the error reported is the first problem in document order.
type reader struct {
	path   string
	fields map[string]json.RawMessage
	err    *error
}

// openRoot starts reading raw, which must be valid JSON, as an object with
// exactly the given fields.
func openRoot(raw []byte, names ...string) *reader {
	var err error
	r := &reader{err: &err}
	r.fields = r.decodeObject(raw, names)
	return r
}

// Err is the first problem found by this reader or any reader opened from it.
func (r *reader) Err() error { return *r.err }

func (r *reader) fail(name, problem string) {
	if *r.err == nil {
		*r.err = &FieldError{Path: joinPath(r.path, name), Problem: problem}
	}
}

// value is the raw field, or nil once an error has been found, so that
// decoding stops at the first problem.
func (r *reader) value(name string) []byte {
	if *r.err != nil {
		return nil
	}
	return bytes.TrimSpace(r.fields[name])
}

// object opens the named field as an object with exactly the given fields.
func (r *reader) object(name string, names ...string) *reader {
	child := &reader{path: joinPath(r.path, name), err: r.err}
	if raw := r.value(name); raw != nil {
		child.fields = child.decodeObject(raw, names)
	}
	return child
}

func (r *reader) decodeObject(raw []byte, names []string) map[string]json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		r.failHere("must be an object")
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		r.failHere("invalid JSON")
		return nil
	}
	fields := make(map[string]json.RawMessage, len(names))
	for dec.More() {
		tok, err := dec.Token()
		key, _ := tok.(string)
		var v json.RawMessage
		if err == nil {
			err = dec.Decode(&v)
		}
		switch {
		case err != nil:
			r.failHere("invalid JSON")
			return nil
		case !slices.Contains(names, key):
			r.fail(key, "unknown field")
			return nil
		case fields[key] != nil:
			r.fail(key, "duplicate field")
			return nil
		}
		fields[key] = v
	}
	for _, n := range names {
		if fields[n] == nil {
			r.fail(n, "required")
			return nil
		}
	}
	return fields
}

// failHere records a problem with the object itself rather than one of its fields.
func (r *reader) failHere(problem string) { r.fail("", problem) }

func (r *reader) bool(name string) bool {
	switch string(r.value(name)) {
	case "true":
		return true
	case "false":
		return false
	}
	r.fail(name, "must be a boolean")
	return false
}

func (r *reader) string(name string) string {
	s, ok := decodeString(r.value(name))
	if !ok {
		r.fail(name, "must be a string")
	}
	return s
}

func (r *reader) enum(name string, allowed ...string) string {
	s := r.string(name)
	if !slices.Contains(allowed, s) {
		r.fail(name, "must be one of "+strings.Join(allowed, ", "))
	}
	return s
}

// numbers decodes an array of numbers. The result is never nil for a valid
// array, so that an empty list re-encodes as [] and not null.
func (r *reader) numbers(name string) []float64 {
	return arrayOf(r, name, "a number", decodeNumber)
}

// strings decodes an array of strings, never nil for a valid array.
func (r *reader) strings(name string) []string {
	return arrayOf(r, name, "a string", decodeString)
}

// arrayOf decodes an array whose items decode decodes, naming each bad item.
func arrayOf[T any](r *reader, name, what string, decode func([]byte) (T, bool)) []T {
	items, ok := r.array(name)
	out := make([]T, 0, len(items))
	for i, raw := range items {
		v, valid := decode(raw)
		if !valid {
			r.fail(fmt.Sprintf("%s[%d]", name, i), "must be "+what)
		}
		out = append(out, v)
	}
	if !ok {
		return nil
	}
	return out
}

func (r *reader) array(name string) ([]json.RawMessage, bool) {
	raw := r.value(name)
	var items []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		r.fail(name, "must be an array")
		return nil, false
	}
	return items, true
}

func decodeString(raw []byte) (string, bool) {
	raw = bytes.TrimSpace(raw)
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func decodeNumber(raw []byte) (float64, bool) {
	raw = bytes.TrimSpace(raw)
	var n float64
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) || json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	return n, true
}
