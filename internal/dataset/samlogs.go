package dataset

import (
	"strconv"

	"backoffice/internal/domain"
)

// The SAM action logs are most of a big file (a million records, 175 MB), and encoding/json's
// reflection spends about 1.7 µs on each, 5.2× what this decoder spends checks included (2.0× for
// one on JSON v2's jsontext: BenchmarkImportJSON, docs/performance.md#the-imports-json); an
// import reads every log twice. samLogSection reads the plain shape those files have with a
// decoder of its own, and hands anything else to encoding/json, so that the records are exactly
// the ones encoding/json would give:
//
//   - keys spelled exactly as the fields' tags, each at most once (encoding/json also takes other
//     cases and repeats);
//   - strings of printable ASCII without escapes, taken as they are (an action of at most maxText);
//   - actionDate given to time.Time's own UnmarshalJSON;
//   - samId a JSON integer that fits an int64 (no fraction, no exponent);
//   - JSON white space between tokens; no null anywhere.
//
// Whatever falls outside (and every error) goes to encoding/json, as before.
func samLogSection(dst *[]domain.SAMActionLog) section {
	generic := sectionOf(dst)
	return section{fast: func(b []byte) (int, error) {
		logs, n, ok := leanSAMLogs(b)
		if !ok {
			return generic.fast(b)
		}
		for i := range logs {
			if logs[i] == (domain.SAMActionLog{}) {
				return 0, errZeroRecord
			}
		}
		*dst = logs
		return n, nil
	}, decode: generic.decode}
}

// leanSAMLogs decodes the array at the start of b; ok is false when it is not of the plain shape.
func leanSAMLogs(b []byte) (logs []domain.SAMActionLog, n int, ok bool) {
	if len(b) == 0 || b[0] != '[' {
		return nil, 0, false
	}
	i := skipSpace(b, 1)
	if i < len(b) && b[i] == ']' {
		return []domain.SAMActionLog{}, i + 1, true
	}
	var in interner
	// The logs gather in chunks, copied once into a slice of the right size at the end: a slice
	// that grows by appending copies a million logs several times over (about 7 % of an import).
	var chunks [][]domain.SAMActionLog
	chunk := make([]domain.SAMActionLog, 0, samChunk)
	for {
		var r domain.SAMActionLog
		if i, ok = leanSAMLog(b, i, &r, &in); !ok {
			return nil, 0, false
		}
		if chunk = append(chunk, r); len(chunk) == cap(chunk) {
			chunks, chunk = append(chunks, chunk), make([]domain.SAMActionLog, 0, samChunk)
		}
		if i = skipSpace(b, i); i >= len(b) {
			return nil, 0, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			logs = make([]domain.SAMActionLog, 0, len(chunks)*samChunk+len(chunk))
			for _, c := range chunks {
				logs = append(logs, c...)
			}
			return append(logs, chunk...), i + 1, true
		default:
			return nil, 0, false
		}
	}
}

// samChunk is how many logs leanSAMLogs gathers before it starts another chunk.
const samChunk = 1 << 14

// leanSAMLog decodes the object at b[i] into r and returns the index just past it.
func leanSAMLog(b []byte, i int, r *domain.SAMActionLog, in *interner) (int, bool) {
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	var seen uint8
	for {
		key, j, ok := plainString(b, i)
		if !ok {
			return 0, false
		}
		if i = skipSpace(b, j); i >= len(b) || b[i] != ':' {
			return 0, false
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
				ok = false // a longer one is refused by checkJSON, naming it
			}
		case "actionDate":
			bit = 8
			start := i
			if _, i, ok = plainString(b, i); ok {
				ok = r.ActionDate.UnmarshalJSON(b[start:i]) == nil
			}
		case "samId":
			bit = 16
			r.SamID, i, ok = plainInt(b, i)
		}
		if !ok || bit == 0 || seen&bit != 0 {
			return 0, false
		}
		seen |= bit
		if i = skipSpace(b, i); i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1, true
		default:
			return 0, false
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
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c < 0x20 || c == '\\' || c >= 0x7f:
			return nil, 0, false
		}
	}
	return nil, 0, false
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
