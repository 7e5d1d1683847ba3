package witness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// What went wrong with a witness: an *Error wraps one of these.
var (
	// ErrRefused: the witness answered that it will not cosign this checkpoint. 422: the
	// checkpoint is not consistent with what it cosigned (a fork); a 409 naming a size larger
	// than the checkpoint's: ErrBehind too; 403: it does not trust the log's key; 404: it does
	// not know the log; 400: a request it cannot read, or an old size above the checkpoint's.
	ErrRefused = errors.New("refused the checkpoint")
	// ErrBehind comes with ErrRefused when the witness has cosigned a larger tree of the log
	// than the checkpoint's. Either another signer of the same log got further (a replica whose
	// walk is behind another's), which the log's own tree, at least as large as the witness's,
	// shows; or the log went back (a database restored from a backup), whose tree is smaller.
	// A 400 to an old size above the checkpoint's is ErrBehind as well: the log itself knew the
	// witness to be further.
	ErrBehind = errors.New("another signer got further, or the log went back")
	// ErrConflict: the witness answered 409 again after the retry with the size it named: its
	// size moved in between (another signer of the same log).
	ErrConflict = errors.New("its tree size moved during the exchange")
	// ErrUnavailable: no answer within the timeout, a network error, or an answer that is not
	// one of the protocol's (5xx, 429, a 409 without a size, ...). Nothing is known of the
	// checkpoint; asking again later is safe.
	ErrUnavailable = errors.New("unavailable")
	// ErrBadCosignature: the witness answered 200 but without a cosignature that verifies under
	// its key in the policy. The answer is dropped.
	ErrBadCosignature = errors.New("answered without a valid cosignature")
)

// Error is a witness's failure to cosign, naming the witness.
type Error struct {
	Witness string // its name in the policy
	Kind    error  // ErrRefused, ErrConflict, ErrUnavailable or ErrBadCosignature
	Status  int    // the HTTP status of its last answer; 0 if none
	Known   int64  // with Status 409: the tree size the witness said it last cosigned
	Detail  string // what it said, or what was wrong with its answer
	Err     error  // ErrBehind, or the cause (a network error, the context's), if any
}

func (e *Error) Error() string {
	s := fmt.Sprintf("witness %s: %v", e.Witness, e.Kind)
	if e.Status != 0 {
		s += fmt.Sprintf(": %d %s", e.Status, http.StatusText(e.Status))
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// ProofFunc returns the RFC 6962 consistency proof of the log's tree from oldSize to newSize
// (0 < oldSize < newSize), for instance tlog.ProveTree over the stored hashes. Cosign calls it
// from one goroutine per witness at once.
type ProofFunc func(ctx context.Context, oldSize, newSize int64) (tlog.TreeProof, error)

// maxProofLines is c2sp.org/tlog-witness's bound on a request's consistency proof.
const maxProofLines = 63

// maxAnswer bounds what is read of a witness's answer: cosignature lines, a size, or an error.
const maxAnswer = 64 << 10

// DefaultTimeout bounds one witness's exchange (both of its attempts) when Client.Timeout is 0.
const DefaultTimeout = 10 * time.Second

// Client asks witnesses for cosignatures over c2sp.org/tlog-witness.
type Client struct {
	// HTTP sends the requests; nil: http.DefaultClient. Its own Timeout, if any, applies to each
	// request as well.
	HTTP *http.Client
	// Timeout bounds each witness's whole exchange (both attempts and the proof it needs), so that
	// a slow witness holds up no other and nothing past its timeout; 0: DefaultTimeout.
	Timeout time.Duration
}

func (c *Client) http() *http.Client {
	if c.HTTP == nil {
		return http.DefaultClient
	}
	return c.HTTP
}

func (c *Client) timeout() time.Duration {
	if c.Timeout <= 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

// Cosignature is a witness's verified cosignature of a checkpoint.
type Cosignature struct {
	Witness string    // its name in the policy
	Size    int64     // the checkpoint's tree size: the witness's size from now on
	Lines   []byte    // its signature lines that verify under its key, for AddCosignatures
	Time    time.Time // when the witness says it cosigned
}

// AddCheckpoint sends msg, a checkpoint note the log signed, to w with oldSize, the tree size
// the log last knew w to have cosigned (0 if it knows none), and the consistency proof from it.
// If w answers 409 with a size up to the checkpoint's, it asks once more from that size; with a
// larger one, it reports ErrRefused and ErrBehind. It accepts w's answer only if a
// cosignature in it verifies under w's key. Every failure of w is an *Error naming w; any other
// error is the caller's (msg is not a checkpoint, proof failed).
func (c *Client) AddCheckpoint(ctx context.Context, w Witness, msg []byte, oldSize int64, proof ProofFunc) (Cosignature, error) {
	size, err := checkpointSize(msg)
	if err != nil {
		return Cosignature{}, err
	}
	if oldSize < 0 {
		return Cosignature{}, fmt.Errorf("witness %s: old size %d", w.Name, oldSize)
	}
	if w.URL == "" {
		return Cosignature{}, &Error{Witness: w.Name, Kind: ErrUnavailable, Detail: "the policy gives it no URL"}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	cs, err := c.attempt(ctx, w, msg, oldSize, size, proof)
	e, ok := conflict(err)
	if !ok {
		if errors.As(err, &e) && e.Status == http.StatusBadRequest && oldSize > size {
			e.Err = ErrBehind
			e.Detail = fmt.Sprintf("the old size %d is above this checkpoint's %d: %s", oldSize, size, e.Detail)
		}
		return cs, err
	}
	if e.Known > size {
		return Cosignature{}, &Error{Witness: w.Name, Kind: ErrRefused, Status: e.Status, Known: e.Known, Err: ErrBehind,
			Detail: fmt.Sprintf("it has cosigned tree size %d, larger than this checkpoint's %d", e.Known, size)}
	}
	cs, err = c.attempt(ctx, w, msg, e.Known, size, proof)
	if e, ok := conflict(err); ok {
		e.Kind = ErrConflict
	}
	return cs, err
}

// conflict is err's 409 that names the witness's tree size.
func conflict(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e) && e.Status == http.StatusConflict && e.Kind == ErrRefused
	return e, ok
}

// attempt is one add-checkpoint request. A 409 comes back as an *Error with Known set.
func (c *Client) attempt(ctx context.Context, w Witness, msg []byte, oldSize, size int64, proof ProofFunc) (Cosignature, error) {
	body, err := requestBody(ctx, w, msg, oldSize, size, proof)
	if err != nil {
		return Cosignature{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(w.URL, "/")+"/add-checkpoint", bytes.NewReader(body))
	if err != nil {
		return Cosignature{}, &Error{Witness: w.Name, Kind: ErrUnavailable, Err: err}
	}
	res, err := c.http().Do(req)
	if err != nil {
		return Cosignature{}, &Error{Witness: w.Name, Kind: ErrUnavailable, Err: err}
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer+1))
	if err != nil {
		return Cosignature{}, &Error{Witness: w.Name, Kind: ErrUnavailable, Status: res.StatusCode, Err: err}
	}
	if len(answer) > maxAnswer {
		return Cosignature{}, &Error{Witness: w.Name, Kind: ErrUnavailable, Status: res.StatusCode, Detail: fmt.Sprintf("an answer longer than %d bytes", maxAnswer)}
	}
	return answerOf(w, msg, size, res.StatusCode, answer)
}

// requestBody is add-checkpoint's request: the old size, the proof from it, a blank line, msg.
func requestBody(ctx context.Context, w Witness, msg []byte, oldSize, size int64, proof ProofFunc) ([]byte, error) {
	var hashes tlog.TreeProof
	if oldSize > 0 && oldSize < size {
		var err error
		if hashes, err = proof(ctx, oldSize, size); err != nil {
			return nil, fmt.Errorf("witness %s: consistency proof from %d to %d: %w", w.Name, oldSize, size, err)
		}
		if len(hashes) > maxProofLines {
			return nil, fmt.Errorf("witness %s: a consistency proof of %d hashes: the protocol allows %d", w.Name, len(hashes), maxProofLines)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", oldSize)
	for _, h := range hashes {
		b.WriteString(h.String() + "\n")
	}
	b.WriteString("\n")
	b.Write(msg)
	return b.Bytes(), nil
}

// answerOf reads a witness's answer to msg.
func answerOf(w Witness, msg []byte, size int64, status int, answer []byte) (Cosignature, error) {
	e := &Error{Witness: w.Name, Status: status, Detail: firstLine(answer)}
	switch status {
	case http.StatusOK:
		return verifyCosignature(w, msg, size, answer)
	case http.StatusConflict:
		known, err := strconv.ParseInt(strings.TrimSuffix(string(answer), "\n"), 10, 64)
		if err != nil || known < 0 || !bytes.HasSuffix(answer, []byte("\n")) {
			e.Kind = ErrUnavailable
			e.Detail = fmt.Sprintf("a 409 without a tree size: %q", truncate(string(answer)))
			return Cosignature{}, e
		}
		e.Kind, e.Known, e.Detail = ErrRefused, known, fmt.Sprintf("it has cosigned tree size %d", known)
		return Cosignature{}, e
	case http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusUnprocessableEntity:
		e.Kind = ErrRefused
		return Cosignature{}, e
	}
	e.Kind = ErrUnavailable
	return Cosignature{}, e
}

// verifyCosignature checks a witness's 200 answer: signature lines of which at least one, under
// w's key, verifies on msg's text. The lines are checked on msg's bare text, so that a
// cosignature of w already in msg cannot stand in for the new one.
func verifyCosignature(w Witness, msg []byte, size int64, answer []byte) (Cosignature, error) {
	bad := func(detail string) (Cosignature, error) {
		return Cosignature{}, &Error{Witness: w.Name, Kind: ErrBadCosignature, Status: http.StatusOK, Detail: detail}
	}
	text, _, err := splitNote(msg)
	if err != nil {
		return Cosignature{}, err
	}
	if _, err := signatureLines(answer); err != nil {
		return bad(err.Error())
	}
	n, err := note.Open(append(append(append([]byte(nil), text...), '\n'), answer...), note.VerifierList(w.v))
	var invalid *note.InvalidSignatureError
	var unverified *note.UnverifiedNoteError
	switch {
	case errors.As(err, &invalid):
		return bad(fmt.Sprintf("its cosignature under %s+%08x does not verify", invalid.Name, invalid.Hash))
	case errors.As(err, &unverified):
		return bad(fmt.Sprintf("no cosignature under its key %s+%08x", w.v.Name(), w.v.KeyHash()))
	case err != nil:
		return bad(err.Error())
	}
	cs := Cosignature{Witness: w.Name, Size: size}
	for _, s := range n.Sigs {
		t, err := cosignatureTime(s)
		if err != nil {
			return bad(err.Error())
		}
		cs.Time = t
		cs.Lines = append(cs.Lines, sigPrefix+s.Name+" "+s.Base64+"\n"...)
	}
	return cs, nil
}

func firstLine(b []byte) string {
	l, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return truncate(l)
}

// Result is one witness's part in Cosign.
type Result struct {
	Witness string
	// Size is the tree size the witness is known to have cosigned after the exchange: the
	// checkpoint's on success, the one it named in a 409, else the old size Cosign was given. The
	// caller passes it as the witness's old size next time.
	Size        int64
	Cosignature Cosignature // on success
	Err         error       // an *Error, or the caller's (see AddCheckpoint)
}

// Outcome is what Cosign got for a checkpoint.
type Outcome struct {
	// Note is the checkpoint with every verified cosignature added.
	Note []byte
	// Signed names the witnesses whose cosignature verified, in the policy's order; Met tells
	// whether they make its quorum.
	Signed  []string
	Met     bool
	Results []Result // one a witness, in the policy's order
}

// Cosign sends msg, a checkpoint note the log signed, to every witness of p at once, each
// bounded by the client's timeout, and adds the cosignatures that verify. oldSizes holds the
// tree size the log last knew each witness (by name) to have cosigned; a missing one is 0, which
// costs that witness one more round trip (a 409 names its size). The error is the caller's: msg
// is not a checkpoint note.
func (c *Client) Cosign(ctx context.Context, p *Policy, msg []byte, oldSizes map[string]int64, proof ProofFunc) (Outcome, error) {
	if _, err := checkpointSize(msg); err != nil {
		return Outcome{}, err
	}
	proof = sharedProofs(proof)
	results := make([]Result, len(p.witnesses))
	var wg sync.WaitGroup
	for i, w := range p.witnesses {
		wg.Go(func() {
			cs, err := c.AddCheckpoint(ctx, w, msg, oldSizes[w.Name], proof)
			results[i] = resultOf(w, cs, err, oldSizes[w.Name])
		})
	}
	wg.Wait()
	out := Outcome{Note: msg, Results: results}
	var lines [][]byte
	for _, r := range results {
		if r.Err == nil {
			out.Signed = append(out.Signed, r.Witness)
			lines = append(lines, r.Cosignature.Lines)
		}
	}
	cosigned, err := AddCosignatures(msg, lines...)
	if err != nil {
		return Outcome{}, err
	}
	out.Note, out.Met = cosigned, p.Met(out.Signed)
	return out, nil
}

func resultOf(w Witness, cs Cosignature, err error, oldSize int64) Result {
	r := Result{Witness: w.Name, Size: oldSize, Cosignature: cs, Err: err}
	var e *Error
	switch {
	case err == nil:
		r.Size = cs.Size
	case errors.As(err, &e) && e.Status == http.StatusConflict && e.Kind != ErrUnavailable:
		r.Size = e.Known
	}
	return r
}

// sharedProofs makes one call of proof for each pair of sizes, however many witnesses need it:
// witnesses that kept up all need the same proof.
func sharedProofs(proof ProofFunc) ProofFunc {
	type sizes struct{ old, new int64 }
	var mu sync.Mutex
	calls := map[sizes]func() (tlog.TreeProof, error){}
	return func(ctx context.Context, oldSize, newSize int64) (tlog.TreeProof, error) {
		mu.Lock()
		f, ok := calls[sizes{oldSize, newSize}]
		if !ok {
			f = sync.OnceValues(func() (tlog.TreeProof, error) { return proof(ctx, oldSize, newSize) })
			calls[sizes{oldSize, newSize}] = f
		}
		mu.Unlock()
		return f()
	}
}
