package api

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// An answer's bytes are its own until its Write has returned (a writer that reused its buffers
// could hand one to the next answer too soon). The writer here encodes another answer while it is
// handed the first one's bytes, as a concurrent request would, and checks that the bytes it was
// handed did not change.
func TestWriteJSONKeepsItsBufferUntilWritten(t *testing.T) {
	for range 3 {
		w := &reentrantWriter{ResponseRecorder: httptest.NewRecorder()}
		writeJSON(w, http.StatusOK, errorBody{Status: 200, Code: "first", Detail: "the first answer"})
		if got, want := w.Body.String(), `{"status":200,"code":"first","detail":"the first answer"}`+"\n"; got != want {
			t.Fatalf("body %q, want %q", got, want)
		}
	}
}

type reentrantWriter struct {
	*httptest.ResponseRecorder
	inner bool
}

func (w *reentrantWriter) Write(b []byte) (int, error) {
	if !w.inner {
		w.inner = true
		before := bytes.Clone(b)
		writeJSON(httptest.NewRecorder(), http.StatusOK, errorBody{Status: 200, Code: "second", Detail: "an answer written meanwhile"})
		if !bytes.Equal(b, before) {
			panic("writeJSON reused a buffer whose Write had not returned")
		}
	}
	return w.ResponseRecorder.Write(b)
}
