package witness

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

const origin = "backoffice.test/audit"

// TestAddCheckpoint: a witness cosigns the log's first checkpoint without a proof and the next
// with one, and the note with the cosignature added opens with the log's and the witness's keys.
func TestAddCheckpoint(t *testing.T) {
	l := newTestLog(t, origin, 12, "a", nil, nil)
	key := newCosigner(t, "witness.test/w1")
	d, srv := newDouble(t, key, l)
	w := witnessOf(t, "w1", key, srv.URL)
	c := &Client{}

	cs, err := c.AddCheckpoint(t.Context(), w, l.checkpoint(t, 5), 0, noProof(t))
	if err != nil {
		t.Fatal(err)
	}
	if cs.Witness != "w1" || cs.Size != 5 || cs.Time.IsZero() {
		t.Errorf("cosignature %+v", cs)
	}
	var asked [][2]int64
	proof := func(ctx context.Context, oldSize, newSize int64) (tlog.TreeProof, error) {
		asked = append(asked, [2]int64{oldSize, newSize})
		return l.proof(ctx, oldSize, newSize)
	}
	msg := l.checkpoint(t, 9)
	cs, err = c.AddCheckpoint(t.Context(), w, msg, 5, proof)
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0] != [2]int64{5, 9} {
		t.Errorf("proofs asked: %v, want one from 5 to 9", asked)
	}
	cosigned, err := AddCosignatures(msg, cs.Lines)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(cosigned, note.VerifierList(l.verifier, w.Verifier()))
	if err != nil || len(n.Sigs) != 2 {
		t.Fatalf("the cosigned note: %v, %d signatures verified, want 2:\n%s", err, len(n.Sigs), cosigned)
	}
	if d.size != 9 || d.count() != 2 {
		t.Errorf("witness at size %d after %d requests", d.size, d.count())
	}
}

// TestAddCheckpointLearnsTheWitnessSize: a log that does not know what a witness cosigned (0)
// learns it from the 409 and asks once more, with the proof from there.
func TestAddCheckpointLearnsTheWitnessSize(t *testing.T) {
	l := newTestLog(t, origin, 12, "a", nil, nil)
	key := newCosigner(t, "witness.test/w1")
	d, srv := newDouble(t, key, l)
	w := witnessOf(t, "w1", key, srv.URL)
	c := &Client{}
	if _, err := c.AddCheckpoint(t.Context(), w, l.checkpoint(t, 5), 0, noProof(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddCheckpoint(t.Context(), w, l.checkpoint(t, 9), 0, l.proof); err != nil {
		t.Fatal(err)
	}
	if d.count() != 3 || d.size != 9 {
		t.Errorf("%d requests, witness at %d; want 3 (one 409) and 9", d.count(), d.size)
	}
	// The same checkpoint again: the 409 names its own size, and the witness cosigns it again.
	if _, err := c.AddCheckpoint(t.Context(), w, l.checkpoint(t, 9), 0, noProof(t)); err != nil {
		t.Fatal(err)
	}
}

// TestRefusals: every refusal of the protocol is ErrRefused naming the witness, and a fork or
// a rollback is refused.
func TestRefusals(t *testing.T) {
	l := newTestLog(t, origin, 12, "a", nil, nil)
	fork := newTestLog(t, origin, 12, "b", l.signer, l.verifier) // same key, other events
	stranger := newTestLog(t, "other.test/audit", 12, "a", nil, nil)
	impostor := newTestLog(t, origin, 12, "a", nil, nil) // same events, another key
	key := newCosigner(t, "witness.test/w1")
	for _, tc := range []struct {
		name   string
		msg    []byte
		old    int64
		status int
	}{
		{"a fork at the witness's size", fork.checkpoint(t, 9), 9, http.StatusUnprocessableEntity},
		{"a fork past the witness's size", fork.checkpoint(t, 12), 9, http.StatusUnprocessableEntity},
		{"a rollback: the witness names a larger size", l.checkpoint(t, 5), 0, http.StatusConflict},
		{"an old size above the checkpoint's", l.checkpoint(t, 5), 9, http.StatusBadRequest},
		{"a log the witness does not know", stranger.checkpoint(t, 9), 9, http.StatusNotFound},
		{"a key the witness does not trust", impostor.checkpoint(t, 12), 9, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, srv := newDouble(t, key, l)
			d.size, d.root = 9, l.root(t, 9)
			_, err := (&Client{}).AddCheckpoint(t.Context(), witnessOf(t, "w1", key, srv.URL), tc.msg, tc.old, fork.proof)
			var e *Error
			if !errors.Is(err, ErrRefused) || !errors.As(err, &e) || e.Status != tc.status || e.Witness != "w1" || !strings.Contains(err.Error(), "witness w1") {
				t.Fatalf("%v; want ErrRefused with status %d naming w1", err, tc.status)
			}
			if d.count() != 1 || d.size != 9 {
				t.Errorf("%d requests, witness at %d: want one, and 9", d.count(), d.size)
			}
			if tc.status == http.StatusConflict && e.Known != 9 {
				t.Errorf("known size %d; want 9", e.Known)
			}
			if behind := tc.status == http.StatusConflict || tc.status == http.StatusBadRequest; errors.Is(err, ErrBehind) != behind {
				t.Errorf("%v: ErrBehind %v, want %v", err, !behind, behind)
			}
		})
	}
}

// TestConflictAgain: a witness whose size moved again after the 409 is ErrConflict, not asked
// a third time.
func TestConflictAgain(t *testing.T) {
	l := newTestLog(t, origin, 12, "a", nil, nil)
	key := newCosigner(t, "witness.test/w1")
	d, srv := newDouble(t, key, l)
	sizes := []string{"3\n", "4\n"}
	d.answer = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		w.Header().Set("Content-Type", "text/x.tlog.size")
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte(sizes[0]))
		sizes = sizes[1:]
		return true
	}
	_, err := (&Client{}).AddCheckpoint(t.Context(), witnessOf(t, "w1", key, srv.URL), l.checkpoint(t, 9), 0, l.proof)
	var e *Error
	if !errors.Is(err, ErrConflict) || !errors.As(err, &e) || e.Known != 4 || d.count() != 2 {
		t.Fatalf("%v after %d requests; want ErrConflict, known 4, after 2", err, d.count())
	}
}

// TestUnavailable: answers outside the protocol, and no answer, are ErrUnavailable.
func TestUnavailable(t *testing.T) {
	l := newTestLog(t, origin, 12, "a", nil, nil)
	key := newCosigner(t, "witness.test/w1")
	for _, tc := range []struct {
		name   string
		status int
		body   string
	}{
		{"a server error", http.StatusInternalServerError, "database locked\n"},
		{"too many requests", http.StatusTooManyRequests, "slow down\n"},
		{"a 409 without a size", http.StatusConflict, "conflict\n"},
		{"a 409 with a negative size", http.StatusConflict, "-1\n"},
		{"an answer too long", http.StatusOK, strings.Repeat("x", maxAnswer+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, srv := newDouble(t, key, l)
			d.answer = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
				return true
			}
			_, err := (&Client{}).AddCheckpoint(t.Context(), witnessOf(t, "w1", key, srv.URL), l.checkpoint(t, 5), 0, noProof(t))
			if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "witness w1") {
				t.Fatalf("%v; want ErrUnavailable naming w1", err)
			}
		})
	}
	t.Run("nobody listening", func(t *testing.T) {
		_, srv := newDouble(t, key, l)
		srv.Close()
		_, err := (&Client{}).AddCheckpoint(t.Context(), witnessOf(t, "w1", key, srv.URL), l.checkpoint(t, 5), 0, noProof(t))
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("%v; want ErrUnavailable", err)
		}
	})
	t.Run("no URL", func(t *testing.T) {
		_, err := (&Client{}).AddCheckpoint(t.Context(), witnessOf(t, "w1", key, ""), l.checkpoint(t, 5), 0, noProof(t))
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no URL") {
			t.Fatalf("%v; want ErrUnavailable: no URL", err)
		}
	})
}

// TestBadCosignature: a 200 is accepted only with a cosignature that verifies under the
// witness's key; anything else is ErrBadCosignature naming the witness.
func TestBadCosignature(t *testing.T) {
	l := newTestLog(t, origin, 12, "a", nil, nil)
	key := newCosigner(t, "witness.test/w1")
	other := newCosigner(t, "witness.test/w1") // same name, another key
	text := func(body []byte) []byte {
		_, msg, _ := bytes.Cut(body, []byte("\n\n"))
		return msg[:bytes.LastIndex(msg, []byte("\n\n"))+1]
	}
	for _, tc := range []struct {
		name   string
		answer func(body []byte) []byte
	}{
		{"a signature that does not verify", func(body []byte) []byte { return flipLastByte(key.lineAt(text(body), 1700000000)) }},
		{"a cosignature of another text", func(body []byte) []byte {
			return key.lineAt([]byte(origin+"\n9\n"+base64.StdEncoding.EncodeToString(make([]byte, 32))+"\n"), 1700000000)
		}},
		{"another key's cosignature", func(body []byte) []byte { return other.lineAt(text(body), 1700000000) }},
		{"a cosignature without a timestamp", func(body []byte) []byte { return key.lineAt(text(body), 0) }},
		{"not signature lines", func([]byte) []byte { return []byte("<html>ok</html>\n") }},
		{"nothing", func([]byte) []byte { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, srv := newDouble(t, key, l)
			d.answer = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
				_, _ = w.Write(tc.answer(body))
				return true
			}
			cs, err := (&Client{}).AddCheckpoint(t.Context(), witnessOf(t, "w1", key, srv.URL), l.checkpoint(t, 5), 0, noProof(t))
			if !errors.Is(err, ErrBadCosignature) || !strings.Contains(err.Error(), "witness w1") || cs.Lines != nil {
				t.Fatalf("%v, lines %q; want ErrBadCosignature naming w1 and no lines", err, cs.Lines)
			}
		})
	}
	t.Run("a good one, with another key's beside it", func(t *testing.T) {
		d, srv := newDouble(t, key, l)
		d.answer = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
			_, _ = w.Write(append(other.lineAt(text(body), 1700000000), key.lineAt(text(body), 1700000000)...))
			return true
		}
		cs, err := (&Client{}).AddCheckpoint(t.Context(), witnessOf(t, "w1", key, srv.URL), l.checkpoint(t, 5), 0, noProof(t))
		if err != nil || bytes.Count(cs.Lines, []byte("\n")) != 1 || cs.Time.Unix() != 1700000000 {
			t.Fatalf("%v, lines %q; want the witness's one line", err, cs.Lines)
		}
	})
}

// TestProofTooLong: the protocol allows 63 proof lines; a longer proof is not sent.
func TestProofTooLong(t *testing.T) {
	l := newTestLog(t, origin, 12, "a", nil, nil)
	key := newCosigner(t, "witness.test/w1")
	d, srv := newDouble(t, key, l)
	long := func(context.Context, int64, int64) (tlog.TreeProof, error) { return make(tlog.TreeProof, 64), nil }
	_, err := (&Client{}).AddCheckpoint(t.Context(), witnessOf(t, "w1", key, srv.URL), l.checkpoint(t, 9), 5, long)
	if err == nil || !strings.Contains(err.Error(), "64 hashes") || d.count() != 0 {
		t.Fatalf("%v after %d requests; want an error before any", err, d.count())
	}
}

// TestCosign: witnesses are asked at once; one that does not answer costs its timeout and no
// other witness's cosignature; the outcome names who signed and whether the quorum holds.
func TestCosign(t *testing.T) {
	l := newTestLog(t, origin, 12, "a", nil, nil)
	fork := newTestLog(t, origin, 12, "b", l.signer, l.verifier)
	keys := map[string]*cosigner{}
	var lines []string
	urls := map[string]string{}
	doubles := map[string]*double{}
	for _, name := range []string{"w1", "w2", "slow", "refusing"} {
		keys[name] = newCosigner(t, "witness.test/"+name)
		d, srv := newDouble(t, keys[name], l)
		d.size, d.root = 5, l.root(t, 5)
		doubles[name], urls[name] = d, srv.URL
		lines = append(lines, "witness "+name+" "+keys[name].vkey+" "+srv.URL)
	}
	// The refusing witness saw another tree at size 5.
	doubles["refusing"].root = fork.root(t, 5)
	stop := make(chan struct{})
	doubles["slow"].answer = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
		return true
	}
	defer close(stop)
	p, err := ParsePolicy([]byte(strings.Join(lines, "\n") + "\ngroup g 2 w1 w2 slow refusing\nquorum g\n"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	proofs := 0
	proof := func(ctx context.Context, oldSize, newSize int64) (tlog.TreeProof, error) {
		mu.Lock()
		proofs++
		mu.Unlock()
		return l.proof(ctx, oldSize, newSize)
	}
	c := &Client{Timeout: 500 * time.Millisecond}
	old := map[string]int64{"w1": 5, "w2": 5, "slow": 5, "refusing": 5}
	out, err := c.Cosign(t.Context(), p, l.checkpoint(t, 9), old, proof)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(out.Signed, ",") != "w1,w2" || !out.Met {
		t.Errorf("signed %v, met %v; want w1,w2 and met", out.Signed, out.Met)
	}
	if proofs != 1 {
		t.Errorf("the proof from 5 to 9 was made %d times for the witnesses, want once", proofs)
	}
	want := map[string]error{"w1": nil, "w2": nil, "slow": context.DeadlineExceeded, "refusing": ErrRefused}
	for _, r := range out.Results {
		if want[r.Witness] == nil && r.Err != nil || !errors.Is(r.Err, want[r.Witness]) {
			t.Errorf("%s: %v, want %v", r.Witness, r.Err, want[r.Witness])
		}
	}
	if errors.Is(out.Results[2].Err, ErrUnavailable) != true {
		t.Errorf("the slow witness: %v, want ErrUnavailable", out.Results[2].Err)
	}
	if out.Results[0].Size != 9 || out.Results[2].Size != 5 {
		t.Errorf("sizes after: %+v", out.Results)
	}
	verdict, err := p.Check(out.Note, l.verifier)
	if err != nil || strings.Join(verdict.Signed, ",") != "w1,w2" || !verdict.Met {
		t.Fatalf("the outcome's note: %+v %v", verdict, err)
	}
}

// TestMLDSACosignature: a witness with an ML-DSA-44 key (type 0x06), the type the specification
// recommends for new witnesses, is verified the same way.
func TestMLDSACosignature(t *testing.T) {
	l := newTestLog(t, origin, 9, "a", nil, nil)
	skey, vkey, err := fnote.GenerateMLDSAKey("witness.test/pq")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		t.Fatal(err)
	}
	key := &cosigner{name: "witness.test/pq", signer: signer, vkey: vkey}
	_, srv := newDouble(t, key, l)
	p, err := ParsePolicy([]byte("witness pq " + vkey + " " + srv.URL + "\nquorum pq\n"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := (&Client{}).Cosign(t.Context(), p, l.checkpoint(t, 9), nil, noProof(t))
	if err != nil || out.Results[0].Err != nil || !out.Met {
		t.Fatalf("%v %+v", err, out.Results)
	}
	if v, err := p.Check(out.Note, l.verifier); err != nil || !v.Met {
		t.Fatalf("the cosigned note: %+v %v", v, err)
	}
}
