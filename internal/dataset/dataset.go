// Package dataset is the dataset file of docs/dataset.md: one JSON object whose keys hold the
// records of the back office. Read decodes and checks a file on its own (syntax, types, enums,
// uuids, duplicates within the file) and Write encodes one; Import adds a file's records to the
// store, checking its references and duplicates against the database, and Export reads the store
// back as a file. ReadFile and ImportFile do what Read and Import do for a file too big to hold:
// its SAM action logs stay in the file, read again a chunk at a time (stream.go). Every kind of
// record is listed once, in kinds.
package dataset

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"backoffice/internal/domain"
)

// Dataset holds every kind of record, in the order the keys are written.
type Dataset struct {
	Partners          []domain.Partner          `json:"partners,omitempty"`
	Users             []domain.User             `json:"users,omitempty"`
	APIKeys           []domain.APIKey           `json:"apiKeys,omitempty"`
	Sessions          []domain.Session          `json:"sessions,omitempty"`
	CardPlans         []domain.CardPlan         `json:"cardPlans,omitempty"`
	Leads             []domain.Lead             `json:"leads,omitempty"`
	Principals        []domain.Principal        `json:"principals,omitempty"`
	Merchants         []domain.Merchant         `json:"merchants,omitempty"`
	MerchantDocuments []domain.MerchantDocument `json:"merchantDocuments,omitempty"`
	PricingModels     []domain.PricingModel     `json:"pricingModels,omitempty"`
	DeploymentModels  []domain.DeploymentModel  `json:"deploymentModels,omitempty"`
	DeploymentOrders  []domain.DeploymentOrder  `json:"deploymentOrders,omitempty"`
	InventoryUnits    []domain.InventoryUnit    `json:"inventoryUnits,omitempty"`
	Equipment         []domain.Equipment        `json:"equipment,omitempty"`
	Varsheets         []domain.Varsheet         `json:"varsheets,omitempty"`
	LineItems         []domain.LineItem         `json:"lineItems,omitempty"`
	Shipments         []Shipment                `json:"shipments,omitempty"`
	FileBuilds        []domain.FileBuild        `json:"fileBuilds,omitempty"`
	SAMActionLogs     []domain.SAMActionLog     `json:"samActionLogs,omitempty"`
	MerchantNotes     []domain.MerchantNote     `json:"merchantNotes,omitempty"`
	AuditEvents       []domain.AuditEvent       `json:"auditEvents,omitempty"`

	// Deletes lists, by key, the ids of stored records that an import --upsert removes.
	Deletes map[string][]domain.ID `json:"deletes,omitempty"`
}

// Shipment is seed 2.6 plus the line item it belongs to.
type Shipment struct {
	domain.Shipment
	LineItemID domain.ID `json:"lineItemId"`
}

// Error names where in the file a problem is, as a JSON path, and what it is.
type Error struct {
	Path    string
	Problem string
	// pos is the problem's offset in the file plus one, when the JSON itself is at fault (0: not
	// known); ReadFile turns it into a line and column.
	pos int64
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Problem
	}
	return e.Path + ": " + e.Problem
}

// Errorf builds an Error.
func Errorf(path, format string, args ...any) *Error {
	return &Error{Path: path, Problem: fmt.Sprintf(format, args...)}
}

// Read decodes and checks a dataset. Ids come back in canonical (lower-case) form.
//
// The file is first read as ReadFile reads it, which checks its JSON (checkJSON) and names the
// line and column of a fault, and the record. Then it is decoded in one streaming pass, each key's
// array straight into its records. Anything unusual (a type error, an unknown key or field, a
// null record) sends the file down the careful path, which decodes record by record so that the
// error names the record and field.
func Read(r io.Reader) (*Dataset, error) {
	b, err := readAll(r)
	if err != nil {
		return nil, &Error{Problem: "cannot read the file: " + err.Error()}
	}
	if _, err := ReadFile(bytes.NewReader(b), int64(len(b))); err != nil {
		return nil, err
	}
	return readBytes(b, nil)
}

// readBytes decodes and checks the file b, fast or carefully; samErr is a problem with SAM logs
// that ReadFile streamed, reported in their turn among the checks.
func readBytes(b []byte, samErr *Error) (*Dataset, error) {
	if ds, ok := readFast(b); ok {
		if err := ds.check(samErr); err != nil {
			return nil, err
		}
		return ds, nil
	}
	return readCareful(b, samErr)
}

// readAll reads r to its end. A file that says its size is read into a buffer of that size: read
// by io.ReadAll, whose buffer grows a quarter at a time, a 175 MB file is copied dozens of times.
func readAll(r io.Reader) ([]byte, error) {
	size := 64 << 10
	if f, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() < math.MaxInt {
			size = int(fi.Size()) + 1 // one more byte, to see the end without growing
		}
	}
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		switch {
		case err == io.EOF:
			return b, nil
		case err != nil:
			return nil, err
		case len(b) == cap(b):
			b = append(b, 0)[:len(b)] // grow as append does
		}
	}
}

// readFast decodes a well-formed file in one pass; ok is false when the careful path must run.
// The object's keys are read here (plain keys only: an escaped one goes the careful way), each
// key's array by its section, straight from the bytes.
func readFast(b []byte) (ds *Dataset, ok bool) {
	ds = &Dataset{}
	sections := ds.sections()
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i = skipSpace(b, i+1)
	seen := map[string]bool{}
	for first := true; ; first = false {
		if i >= len(b) {
			return nil, false
		}
		if first && b[i] == '}' {
			i++
			break
		}
		key, j, ok := plainString(b, i)
		if !ok || seen[string(key)] {
			return nil, false
		}
		sec, known := sections[string(key)]
		if !known {
			return nil, false
		}
		seen[string(key)] = true
		if i = skipSpace(b, j); i >= len(b) || b[i] != ':' {
			return nil, false
		}
		i = skipSpace(b, i+1)
		n, err := sec.fast(b[i:])
		if err != nil {
			return nil, false
		}
		if i = skipSpace(b, i+n); i >= len(b) {
			return nil, false
		}
		if b[i] == '}' {
			i++
			break
		}
		if b[i] != ',' {
			return nil, false
		}
		i = skipSpace(b, i+1)
	}
	if skipSpace(b, i) != len(b) {
		return nil, false
	}
	return ds, true
}

// readCareful decodes record by record, to name the first problem precisely.
func readCareful(b []byte, samErr *Error) (*Dataset, error) {
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&top); err != nil {
		return nil, &Error{Problem: "not a JSON object: " + describe(err)}
	}
	if skipSpace(b, int(dec.InputOffset())) != len(b) { // dec.More() is false before a '}' or ']'
		return nil, &Error{Problem: "unexpected data after the JSON object"}
	}
	if top == nil {
		return nil, &Error{Problem: "not a JSON object"}
	}
	var ds Dataset
	sections := ds.sections()
	for _, key := range slices.Sorted(maps.Keys(top)) { // the same key named every time
		if _, ok := sections[key]; !ok {
			return nil, Errorf(key, "unknown key (known keys: %s)", strings.Join(keys(), ", "))
		}
	}
	for _, key := range keys() {
		raw, ok := top[key]
		if !ok || string(raw) == "null" {
			continue
		}
		if err := sections[key].decode(key, raw); err != nil {
			return nil, err
		}
	}
	if err := ds.check(samErr); err != nil {
		return nil, err
	}
	return &ds, nil
}

// Write encodes the dataset as an indented JSON object.
func Write(w io.Writer, ds *Dataset) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetIndent("", "  ")
	if err := enc.Encode(ds); err != nil {
		return err
	}
	return bw.Flush()
}

// section decodes one key's array: fast, the whole array at the start of b at once, saying how
// many bytes it took; decode, record by record, naming the record that fails.
type section struct {
	fast   func(b []byte) (int, error)
	decode func(key string, raw json.RawMessage) error
}

// errZeroRecord sends a null or empty record to the careful path, which names it.
var errZeroRecord = errors.New("dataset: a null or empty record")

// keys are the file's keys, in the order kinds lists them, then deletes.
func keys() []string {
	var out []string
	for _, k := range kinds() {
		out = append(out, k.key)
	}
	return append(out, deletesKey)
}

// sections gives each key's section.
func (ds *Dataset) sections() map[string]section {
	m := map[string]section{}
	for _, k := range kinds() {
		m[k.key] = k.section(ds)
	}
	m[deletesKey] = deletesSection(&ds.Deletes)
	return m
}

// fastDecode decodes the JSON value at the start of b into v, unknown fields refused, and says
// how many bytes it took.
func fastDecode(b []byte, v any) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return 0, err
	}
	return int(dec.InputOffset()), nil
}

// sectionOf decodes an array record by record, so that an error can name the record's index.
func sectionOf[T any](dst *[]T) section {
	return section{fast: func(b []byte) (int, error) {
		var out []T
		n, err := fastDecode(b, &out)
		if err != nil {
			return 0, err
		}
		for i := range out {
			if reflect.ValueOf(&out[i]).Elem().IsZero() {
				return 0, errZeroRecord
			}
		}
		*dst = out
		return n, nil
	}, decode: func(key string, raw json.RawMessage) error {
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return Errorf(key, "expected an array of objects")
		}
		out := make([]T, len(items))
		for i, item := range items {
			path := fmt.Sprintf("%s[%d]", key, i)
			if err := decodeStrict(item, &out[i]); err != nil {
				return fieldError(path, item, err)
			}
		}
		*dst = out
		return nil
	}}
}

func decodeStrict(raw json.RawMessage, v any) error {
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("null")) {
		return errors.New("expected an object, got null")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// fieldError turns an error decoding the record raw into a path and a problem a person can act
// on. A type error's field is found by its offset (encoding/json's Field leaves out the indices).
func fieldError(path string, raw []byte, err error) *Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return Errorf(path+valuePath(raw, int(te.Offset)), "expected %s, got %s", jsonType(te.Type.Kind().String()), te.Value)
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		if name, err := strconv.Unquote(f); err == nil {
			if at, ok := namePath(raw, name); ok {
				return Errorf(path+at, "unknown field")
			}
		}
		return Errorf(path, "unknown field %s", f)
	}
	return Errorf(path, "%s", describe(err))
}

func describe(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
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

// Records counts the records of the file, its deletes included.
func (ds *Dataset) Records() int {
	n := 0
	for _, k := range kinds() {
		n += k.count(ds)
	}
	for _, ids := range ds.Deletes {
		n += len(ids)
	}
	return n
}
