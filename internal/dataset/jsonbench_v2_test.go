//go:build goexperiment.jsonv2

package dataset

import (
	"bytes"
	"encoding/json/jsontext"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"backoffice/internal/domain"
)

// BenchmarkImportJSONv2 is BenchmarkImportJSON's pieces done with JSON v2's jsontext, which
// refuses invalid UTF-8, lone surrogates and (exactly) repeated names itself.
func BenchmarkImportJSONv2(b *testing.B) {
	file := benchFile()
	b.Run("check/jsontext", func(b *testing.B) {
		b.SetBytes(int64(len(file)))
		for b.Loop() {
			if err := jsontextCheck(file); err != nil {
				b.Fatal(err)
			}
		}
	})
	// jsontext's own checks alone (UTF-8, surrogates, names repeated in the same case), without
	// those it leaves to its caller: the lower bound of any check built on it.
	b.Run("check/jsontext_validate_only", func(b *testing.B) {
		b.SetBytes(int64(len(file)))
		for b.Loop() {
			dec := jsontext.NewDecoder(bytes.NewReader(file))
			if _, err := dec.ReadValue(); err != nil {
				b.Fatal(err)
			}
		}
	})
	logs := samArrayBytes(file)
	b.Run("sam_logs/jsontext_read_only", func(b *testing.B) {
		b.SetBytes(int64(len(logs)))
		for b.Loop() {
			dec := jsontext.NewDecoder(bytes.NewReader(logs))
			if _, err := dec.ReadToken(); err != nil {
				b.Fatal(err)
			}
			n := 0
			for dec.PeekKind() == '{' {
				if _, err := dec.ReadValue(); err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != benchLogs {
				b.Fatal(n)
			}
		}
		b.ReportMetric(float64(benchLogs*b.N)/b.Elapsed().Seconds(), "logs/s")
	})
	b.Run("sam_logs/jsontext", func(b *testing.B) {
		b.SetBytes(int64(len(logs)))
		for b.Loop() {
			dec := jsontext.NewDecoder(bytes.NewReader(logs))
			if _, err := dec.ReadToken(); err != nil {
				b.Fatal(err)
			}
			var d samTokens
			n := 0
			for dec.PeekKind() == '{' {
				var r domain.SAMActionLog
				if err := d.read(dec, &r); err != nil {
					b.Fatal(err)
				}
				if _, _, ok := validSAMLog(&r); !ok {
					b.Fatal("invalid log")
				}
				n++
			}
			if n != benchLogs {
				b.Fatal(n)
			}
		}
		b.ReportMetric(float64(benchLogs*b.N)/b.Elapsed().Seconds(), "logs/s")
	})
}

// jsontextCheck makes checkJSON's checks with jsontext: it refuses invalid UTF-8, lone
// surrogates and a name given twice in the same case; a name given twice in another case, NUL,
// the limits and depth are checked here, on the values it reads.
func jsontextCheck(b []byte) error {
	dec := jsontext.NewDecoder(bytes.NewReader(b), jsontext.AllowDuplicateNames(true))
	type frame struct {
		object bool
		name   string
		names  nameSet
		start  int64
	}
	var stack []*frame
	var buf, scratch []byte
	limitOf := func() int {
		for k := len(stack) - 1; k >= 0; k-- {
			if stack[k].object {
				if n, ok := longFields[stack[k].name]; ok {
					return n
				}
				break
			}
		}
		return maxText
	}
	for {
		if len(stack) == 2 && !stack[1].object {
			stack[1].start = dec.InputOffset()
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		_, length := dec.StackIndex(dec.StackDepth())
		wantName := top != nil && top.object && length%2 == 0
		switch kind := dec.PeekKind(); kind {
		case 0:
			_, err := dec.ReadToken()
			if err == io.EOF {
				return nil
			}
			return err
		case '{', '[':
			if _, err := dec.ReadToken(); err != nil {
				return err
			}
			if len(stack) >= maxDepth+1 {
				return fmt.Errorf("nested more than %d deep at offset %d", maxDepth, dec.InputOffset())
			}
			stack = append(stack, &frame{object: kind == '{'})
			continue
		case '}', ']':
			if _, err := dec.ReadToken(); err != nil {
				return err
			}
			stack = stack[:len(stack)-1]
		case '"':
			v, err := dec.ReadValue()
			if err != nil {
				return err
			}
			buf = v[1 : len(v)-1] // verbatim but for escapes, which only then need undoing
			if bytes.IndexByte(buf, '\\') >= 0 {
				buf, _ = jsontext.AppendUnquote(scratch[:0], v)
				scratch = buf
			}
			if wantName {
				if !top.names.add(string(buf)) {
					return fmt.Errorf("duplicate name %q at offset %d", buf, dec.InputOffset())
				}
				top.name = string(buf)
				continue
			}
			if bytes.IndexByte(buf, 0) >= 0 {
				return fmt.Errorf("a NUL character at offset %d", dec.InputOffset())
			}
			if n := utf8.RuneCount(buf); n > limitOf() {
				return fmt.Errorf("longer than %d characters (%d)", limitOf(), n)
			}
		default:
			if err := dec.SkipValue(); err != nil {
				return err
			}
		}
		if len(stack) == 2 && !stack[1].object && dec.InputOffset()-stack[1].start > int64(recordLimit(stack[0].name)) {
			return fmt.Errorf("a record larger than its limit")
		}
	}
}

// samTokens decodes a SAM log from jsontext's values: the plain replacement of leanSAMLog.
type samTokens struct {
	in  interner
	buf []byte
}

func (d *samTokens) read(dec *jsontext.Decoder, r *domain.SAMActionLog) error {
	if _, err := dec.ReadToken(); err != nil { // '{'
		return err
	}
	var seen uint8
	for dec.PeekKind() == '"' {
		name, err := dec.ReadValue()
		if err != nil {
			return err
		}
		var bit uint8
		switch string(name) { // the names are checked by jsontext; an escaped one is not plain
		case `"id"`:
			bit = 1
		case `"entityId"`:
			bit = 2
		case `"action"`:
			bit = 4
		case `"actionDate"`:
			bit = 8
		case `"samId"`:
			bit = 16
		default:
			return fmt.Errorf("unknown field %s", name)
		}
		if seen&bit != 0 {
			return fmt.Errorf("duplicate field %s", name)
		}
		seen |= bit
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		if bit == 16 {
			if r.SamID, err = strconv.ParseInt(string(v), 10, 64); err != nil {
				return err
			}
			continue
		}
		if v.Kind() != '"' {
			return fmt.Errorf("expected a string")
		}
		if d.buf, err = jsontext.AppendUnquote(d.buf[:0], v); err != nil {
			return err
		}
		if bytes.IndexByte(d.buf, 0) >= 0 || utf8.RuneCount(d.buf) > maxText {
			return fmt.Errorf("NUL or too long")
		}
		switch bit {
		case 1:
			r.ID = domain.ID(d.buf)
		case 2:
			r.EntityID = domain.ID(d.in.get(d.buf))
		case 4:
			r.Action = d.in.get(d.buf)
		case 8:
			if err := r.ActionDate.UnmarshalJSON(v); err != nil {
				return err
			}
		}
	}
	_, err := dec.ReadToken() // '}'
	return err
}

// jsontext refuses what checkJSON refuses among the cases they share.
func TestJSONTextCheckAgrees(t *testing.T) {
	for _, s := range []string{`{"a": 1, "A": 2}`, `{"a": 1, "a": 2}`, `{"a": "\u0000"}`, `{"a": "\ud800"}`, `{"name": "` + strings.Repeat("x", 256) + `"}`,
		`{"body": "` + strings.Repeat("x", 256) + `"}`, strings.Repeat("[", 18) + strings.Repeat("]", 18), "\"\xff\"", `[1, 2`, `{"a": [{"b": 1, "b": 2}]}`} {
		if (checkJSON([]byte(s), maxRecord) == nil) != (jsontextCheck([]byte(s)) == nil) {
			t.Errorf("%q: checkJSON %v, jsontextCheck %v", s, checkJSON([]byte(s), maxRecord), jsontextCheck([]byte(s)))
		}
	}
	if err := jsontextCheck(benchFile()); err != nil {
		t.Fatal(err)
	}
}
