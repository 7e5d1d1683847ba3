package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"backoffice/internal/domain"
)

// The SAM action log page is the one large body the service sends on every read: it is encoded
// by hand, byte for byte what encoding/json writes for List[domain.SAMActionLog] (with HTML
// escaping off), without reflection. TestSAMPageEncoding and FuzzSAMPageEncoding hold the two
// to the same bytes.

// pageBuffers are reused page encodings.
var pageBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// writeSAMPage writes a page of logs.
func writeSAMPage(w http.ResponseWriter, m Meta, logs []domain.SAMActionLog) {
	p := pageBuffers.Get().(*[]byte)
	b, ok := appendSAMPage((*p)[:0], m, logs)
	if ok {
		writeBody(w, http.StatusOK, b)
	} else {
		writeJSON(w, http.StatusOK, List[domain.SAMActionLog]{Meta: m, Data: logs})
	}
	if cap(b) <= 64<<10 {
		*p = b[:0]
		pageBuffers.Put(p)
	}
}

// appendSAMPage appends the page's JSON and a newline; ok is false for a value it leaves to
// encoding/json (a date outside the years 0-9999, which encoding/json refuses).
func appendSAMPage(b []byte, m Meta, logs []domain.SAMActionLog) ([]byte, bool) {
	b = append(b, `{"meta":{"page":`...)
	b = strconv.AppendInt(b, m.Page, 10)
	b = append(b, `,"perPage":`...)
	b = strconv.AppendInt(b, m.PerPage, 10)
	b = append(b, `,"totalCount":`...)
	b = strconv.AppendInt(b, m.TotalCount, 10)
	b = append(b, `,"totalPages":`...)
	b = strconv.AppendInt(b, m.TotalPages, 10)
	b = append(b, `},"data":`...)
	if logs == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range logs {
			l := &logs[i]
			if y := l.ActionDate.Year(); y < 0 || y > 9999 {
				return b, false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = appendString(b, string(l.ID))
			b = append(b, `,"entityId":`...)
			b = appendString(b, string(l.EntityID))
			b = append(b, `,"action":`...)
			b = appendString(b, l.Action)
			b = append(b, `,"actionDate":"`...)
			b = l.ActionDate.AppendFormat(b, time.RFC3339Nano)
			b = append(b, `","samId":`...)
			b = strconv.AppendInt(b, l.SamID, 10)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, "}\n"...), true
}

// appendString appends s as a JSON string, as encoding/json does with HTML escaping off.
// Plain printable ASCII, the usual case, is copied as is; anything else goes through
// encoding/json itself.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return appendStringSlow(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendStringSlow(b []byte, s string) []byte {
	buf := getBuffer()
	defer putBuffer(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	out := buf.Bytes()
	return append(b, out[:len(out)-1]...) // without the encoder's newline
}
