package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
)

// BenchmarkWriteJSON is writeJSON against writeJSONPooled, the same writer keeping its buffers in a
// sync.Pool from one answer to the next, on an error body, a service acceptance and a SAM page of
// the default size (as the handler gives it). docs/performance.md has the figure.
//
//	go test ./internal/api -run '^$' -bench 'WriteJSON' -benchmem -cpu 1 -count 6
func BenchmarkWriteJSON(b *testing.B) {
	bodies := map[string]any{}
	for _, body := range benchBodies() {
		bodies[body.name] = handlerValue(body.v)
	}
	for _, name := range []string{"error", "acceptance", "sam_page_20"} {
		v := bodies[name]
		for _, way := range []struct {
			name  string
			write func(http.ResponseWriter, int, any)
		}{{"plain", writeJSON}, {"pooled", writeJSONPooled}} {
			b.Run(name+"/"+way.name, func(b *testing.B) {
				w := &discardWriter{header: http.Header{}}
				for b.Loop() {
					way.write(w, http.StatusOK, v)
				}
				if w.n == 0 {
					b.Fatal("nothing written")
				}
			})
		}
	}
}

// Both ways write the same bytes.
func TestWriteJSONPooledAgrees(t *testing.T) {
	for _, body := range benchBodies() {
		v := handlerValue(body.v)
		plain, pooled := &discardWriter{header: http.Header{}, keep: true}, &discardWriter{header: http.Header{}, keep: true}
		writeJSON(plain, http.StatusOK, v)
		writeJSONPooled(pooled, http.StatusOK, v)
		if !bytes.Equal(plain.body, pooled.body) || plain.body == nil {
			t.Errorf("%s: plain %s, pooled %s", body.name, plain.body, pooled.body)
		}
	}
}

// writeJSONPooled is writeJSON with its buffers kept in a pool: the way BenchmarkWriteJSON
// measures against.
func writeJSONPooled(w http.ResponseWriter, status int, v any) {
	buf := bodyBuffers.Get().(*bytes.Buffer)
	defer putBodyBuffer(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		writeBody(w, http.StatusInternalServerError, []byte(`{"status":500,"code":"internal","detail":"the service failed to encode its response"}`+"\n"))
		return
	}
	writeBody(w, status, buf.Bytes())
}

var bodyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxKeptBodyBuffer bounds what the pool keeps: a rare large answer is not held on to.
const maxKeptBodyBuffer = 64 << 10

func putBodyBuffer(b *bytes.Buffer) {
	if b.Cap() > maxKeptBodyBuffer {
		return
	}
	b.Reset()
	bodyBuffers.Put(b)
}

// discardWriter is a ResponseWriter that counts what it is given (and keeps it when asked).
type discardWriter struct {
	header http.Header
	n      int
	keep   bool
	body   []byte
}

func (w *discardWriter) Header() http.Header { return w.header }
func (w *discardWriter) WriteHeader(int)     {}
func (w *discardWriter) Write(b []byte) (int, error) {
	w.n += len(b)
	if w.keep {
		w.body = append(w.body, b...)
	}
	return len(b), nil
}
