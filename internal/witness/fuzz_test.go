package witness

import (
	"testing"
)

// FuzzParsePolicy: no text makes the parser crash, and a policy it accepts answers Met.
func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte("witness w1 witness.test/w1+742d0e5b+BEYh2tbqql0HjLyAZAqnJyal7O+utwTjd3mbL12q7gdX https://w1.test\ngroup g any w1\nquorum g\n"))
	f.Add([]byte("# c\nlog x+1+AQ==\nquorum none\n"))
	f.Add([]byte("group g 1\nquorum g"))
	f.Fuzz(func(t *testing.T, text []byte) {
		p, err := ParsePolicy(text)
		if err == nil {
			p.Met(nil)
			_ = p.RequireURLs()
		}
	})
}

// FuzzAddCosignatures: no note or line makes it crash, and what it returns is a note it reads.
func FuzzAddCosignatures(f *testing.F) {
	f.Add([]byte("o\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— o AAAAAAAA\n"), []byte("— w AAAAAAAA\n"))
	f.Add([]byte("\n\n"), []byte("—  \n"))
	f.Fuzz(func(t *testing.T, msg, line []byte) {
		out, err := AddCosignatures(msg, line)
		if err != nil {
			return
		}
		if _, _, err := splitNote(out); err != nil {
			t.Fatalf("AddCosignatures(%q, %q) = %q, which it cannot read: %v", msg, line, out, err)
		}
		_, _ = checkpointSize(out)
	})
}

// FuzzAnswer: no answer of a witness makes the client crash, and only a 200 with lines under the
// witness's key is a cosignature.
func FuzzAnswer(f *testing.F) {
	key := newCosigner(f, "witness.test/w1")
	w, err := NewWitness("w1", key.vkey, "https://w1.test")
	if err != nil {
		f.Fatal(err)
	}
	msg := []byte("o\n5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— o AAAAAAAA\n")
	f.Add(200, []byte("— witness.test/w1 AAAAAAAA\n"))
	f.Add(409, []byte("7\n"))
	f.Add(422, []byte("bad consistency proof\n"))
	f.Fuzz(func(t *testing.T, status int, answer []byte) {
		cs, err := answerOf(w, msg, 5, status, answer)
		if err == nil && (status != 200 || len(cs.Lines) == 0) {
			t.Fatalf("status %d answer %q accepted: %+v", status, answer, cs)
		}
	})
}
