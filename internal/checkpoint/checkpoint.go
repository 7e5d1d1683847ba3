// Package checkpoint holds the audit trail's signed checkpoints: statements, kept outside the
// database, that the trail held so many events with such a digest (see docs/compliance.md). serve
// signs them; `audit verify` checks the database, or an export, against them. The format is
// documented for auditors who check it with their own tools.
package checkpoint

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"backoffice/internal/store"
)

// Label opens every signed message; the "v1" names this format.
const Label = "backoffice audit checkpoint v1"

// Checkpoint is one line of a checkpoints file.
type Checkpoint struct {
	V int `json:"v"`
	// Seq is the newest event it covers; Head that event's link (hex, "" for an unlinked event);
	// Digest the digest of the trail from seq 1 up to it (hex, see store.ChainDigest).
	Seq    int64  `json:"seq"`
	Head   string `json:"head"`
	Digest string `json:"digest"`
	// Prev is the id (ID) of the checkpoint before it in the same file, "" for the first.
	Prev string `json:"prev"`
	// At is when it was signed (RFC 3339, UTC); KeyID the master key whose checkpoint key signed.
	At    string `json:"at"`
	KeyID string `json:"keyId"`
	// Sig is the Ed25519 signature of Message, in standard base64.
	Sig string `json:"sig"`
}

// Message is what the signature covers: the label and the fields, each on its own line.
func (c Checkpoint) Message() []byte {
	return []byte(strings.Join([]string{Label, strconv.FormatInt(c.Seq, 10), c.Head, c.Digest, c.Prev, c.At, c.KeyID}, "\n"))
}

// ID names the checkpoint: the SHA-256 of its message, in hex. The next checkpoint's Prev.
func (c Checkpoint) ID() string {
	sum := sha256.Sum256(c.Message())
	return hex.EncodeToString(sum[:])
}

// Sign makes the checkpoint of the trail v proved, naming prev (the id of the checkpoint before
// it, "" for the first) and signed under key, the checkpoint key of the master key keyID. It is
// the only way this package signs, and v only a walk of the chain makes (store.Verified): no
// checkpoint covers a trail that was not verified, link by link, just before.
func Sign(v store.Verified, prev string, at time.Time, keyID string, key ed25519.PrivateKey) (Checkpoint, error) {
	if err := v.Err(); err != nil {
		return Checkpoint{}, err
	}
	if v.Seq() == 0 {
		return Checkpoint{}, errors.New("audit checkpoints: the trail is empty: nothing to sign")
	}
	c := Checkpoint{V: 1, Seq: v.Seq(), Head: v.Head(), Digest: hex.EncodeToString(v.Digest()), Prev: prev,
		At: at.UTC().Format(time.RFC3339Nano), KeyID: keyID}
	c.Sig = base64.StdEncoding.EncodeToString(ed25519.Sign(key, c.Message()))
	return c, nil
}

// SignedBy tells whether pub made the signature.
func (c Checkpoint) SignedBy(pub ed25519.PublicKey) bool {
	sig, err := base64.StdEncoding.DecodeString(c.Sig)
	return err == nil && len(pub) == ed25519.PublicKeySize && ed25519.Verify(pub, c.Message(), sig)
}

// Entry is a checkpoint as read from a file: where it was, for reports.
type Entry struct {
	Checkpoint
	File string
	Line int
}

// What names the entry in a report.
func (e Entry) What() string {
	return fmt.Sprintf("the checkpoint of %s (%s line %d)", e.At, e.File, e.Line)
}

// File is a checkpoints file as read.
type File struct {
	Name    string
	Entries []Entry
	// Torn are the lines a write left unfinished (a full disk, a crash while appending): they are
	// left out, and the checkpoints around them are checked as if they were not there.
	Torn []int
}

// Append appends, as one line at the end of the file at path (made if missing, mode 0600), the
// checkpoint sign makes given the id of the file's last checkpoint (its predecessor, "" when there
// is none), and syncs it to disk before it returns. It holds an exclusive lock on the file (flock)
// from reading the predecessor to the sync, so that processes appending to one file each name the
// checkpoint truly before theirs. A file that ends in a torn line gets the new one on a line of its
// own.
//
// A checkpoint that names its predecessor vouches for it, so Append refuses (ErrUnverifiable)
// unless the predecessor's signature holds under one of keys: a line appended by hand, or one
// signed under a key that is not given, is never vouched for unchecked. When the predecessor
// already covers the seq sign made, or a later one (another process appending to the file got
// there first), nothing is written: Append returns the predecessor, and appended false.
func Append(path string, keys map[string]ed25519.PublicKey, sign func(prev string) (Checkpoint, error)) (c Checkpoint, appended bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("audit checkpoints: %w", err)
	}
	defer f.Close()
	unlock, err := lockFile(f)
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("audit checkpoints: %s: lock: %w", path, err)
	}
	defer unlock()
	prev, clean, err := lastInFile(f)
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("audit checkpoints: %s: %w", path, err)
	}
	var prevID string
	if prev != nil {
		if err := CheckPredecessor(*prev, keys); err != nil {
			return Checkpoint{}, false, fmt.Errorf("%s: %w", path, err)
		}
		prevID = prev.ID()
	}
	if c, err = sign(prevID); err != nil {
		return Checkpoint{}, false, err
	}
	if prev != nil && c.Seq <= prev.Seq {
		return *prev, false, nil
	}
	line, err := json.Marshal(c)
	if err != nil {
		return Checkpoint{}, false, err
	}
	var b []byte
	if !clean {
		b = append(b, '\n')
	}
	b = append(append(b, line...), '\n')
	if _, err = f.Write(b); err == nil {
		err = f.Sync()
	}
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("audit checkpoints: %s: %w", path, err)
	}
	return c, true, nil
}

// CheckPredecessor says why a new checkpoint may not name p, a file's last checkpoint (an
// ErrUnverifiable): its key is not among keys, or its signature does not hold under it. Append
// holds every append to it; serve holds a file to it before it starts.
func CheckPredecessor(p Checkpoint, keys map[string]ed25519.PublicKey) error {
	what := fmt.Sprintf("the last checkpoint in the file (seq %d, signed at %s)", p.Seq, p.At)
	pub, ok := keys[p.KeyID]
	switch {
	case !ok:
		return fmt.Errorf("%w: %s names key %s, which the ring does not hold: a new checkpoint would vouch for it unchecked; add the key back to the ring, or find out where the line came from and move the file aside (keep it)", ErrUnverifiable, what, p.KeyID)
	case !p.SignedBy(pub):
		return fmt.Errorf("%w: the signature of %s does not hold under key %s: forged or altered; find out why, then move the file aside (keep it)", ErrUnverifiable, what, p.KeyID)
	}
	return nil
}

// tailChunk is how much of a file's end Append reads first to find the last checkpoint.
const tailChunk = 16 << 10

// lastInFile reads f's last checkpoint (nil when it has none) and whether f ends where a new line
// may start (empty, or after a newline). It reads the end of the file, more of it while the
// complete lines there are torn ones.
func lastInFile(f *os.File) (last *Checkpoint, clean bool, err error) {
	st, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	size := st.Size()
	for chunk := int64(tailChunk); ; chunk *= 2 {
		from := max(0, size-chunk)
		b := make([]byte, size-from)
		if _, err := f.ReadAt(b, from); err != nil && !errors.Is(err, io.EOF) {
			return nil, false, err
		}
		clean = len(b) == 0 || b[len(b)-1] == '\n'
		lines := bytes.SplitAfter(b, []byte("\n"))
		if from > 0 {
			lines = lines[1:] // the first may start before the chunk
		}
		for i := len(lines) - 1; i >= 0; i-- {
			c, _, err := parseLine(lines[i]) // past a torn or blank line, the one before it
			switch {
			case err != nil:
				return nil, clean, fmt.Errorf("a line near the end is not a checkpoint of version 1: %w", err)
			case c != nil:
				return c, clean, nil
			}
		}
		if from == 0 {
			return nil, clean, nil
		}
	}
}

// ReadFile reads a checkpoints file. A line a write left unfinished (torn) is listed and left
// out; any other line that is not a checkpoint is an error naming it.
func ReadFile(path string) (File, error) {
	f, err := os.Open(path)
	if err != nil {
		return File{}, fmt.Errorf("audit checkpoints: %w", err)
	}
	defer f.Close()
	return read(f, path)
}

func read(r io.Reader, name string) (File, error) {
	br := bufio.NewReader(r)
	file := File{Name: name}
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return File{}, fmt.Errorf("audit checkpoints: %s: %w", name, err)
		}
		c, torn, perr := parseLine(line)
		switch {
		case perr != nil:
			return File{}, fmt.Errorf("audit checkpoints: %s line %d: not a checkpoint of version 1", name, n)
		case torn:
			file.Torn = append(file.Torn, n)
		}
		if c != nil {
			file.Entries = append(file.Entries, Entry{Checkpoint: *c, File: name, Line: n})
		}
		if err != nil { // io.EOF: that was the last line, with or without its newline
			return file, nil
		}
	}
}

// parseLine reads one line of a checkpoints file: a checkpoint, nothing (a blank line), or a torn
// line (torn: a checkpoint cut short, possibly followed on the same line by a whole one, as an
// append after a torn line left it before appends started on a line of their own). Anything else
// is an error.
func parseLine(line []byte) (c *Checkpoint, torn bool, err error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, false, nil
	}
	if c, err := decode(line); err == nil {
		return c, false, nil
	} else if !errors.Is(err, io.ErrUnexpectedEOF) {
		// A torn prefix with a whole checkpoint appended onto it.
		if i := bytes.LastIndex(line, []byte(`{"v":`)); i > 0 {
			if _, perr := decode(line[:i]); errors.Is(perr, io.ErrUnexpectedEOF) {
				if c, err := decode(line[i:]); err == nil {
					return c, true, nil
				}
			}
		}
		return nil, false, err
	}
	return nil, true, nil
}

// decode reads one checkpoint of version 1 that fills b; io.ErrUnexpectedEOF when b is one cut
// short.
func decode(b []byte) (*Checkpoint, error) {
	var c Checkpoint
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, err
	}
	if dec.More() || c.V != 1 {
		return nil, errors.New("not a checkpoint of version 1")
	}
	return &c, nil
}

// ErrUnverifiable marks checkpoints that cannot be checked: none signed under a key given, or
// the file does not hold together. It is neither intact nor broken.
var ErrUnverifiable = errors.New("audit checkpoints cannot be checked")

// Vouched checks a file's checkpoints and returns those it can vouch for. Each must name the one
// before it (Prev), so the newest whose signature holds under one of keys vouches for every
// checkpoint before it, whatever key signed those (a key since retired). A signature that does
// not hold under the key it names, a broken Prev, or no checkpoint signed under a key given, is
// ErrUnverifiable; checkpoints after the last one vouched for are returned apart (unvouched):
// nothing vouches for them, and whoever reads them cannot check them.
func Vouched(entries []Entry, keys map[string]ed25519.PublicKey) (vouched, unvouched []Entry, err error) {
	last := -1
	for i, e := range entries {
		if i > 0 && e.Prev != entries[i-1].ID() {
			return nil, nil, fmt.Errorf("%w: %s does not name the one before it: the file was altered", ErrUnverifiable, e.What())
		}
		pub, ok := keys[e.KeyID]
		if !ok {
			continue
		}
		if !e.SignedBy(pub) {
			return nil, nil, fmt.Errorf("%w: the signature of %s does not hold under key %s: forged or altered", ErrUnverifiable, e.What(), e.KeyID)
		}
		last = i
	}
	if len(entries) > 0 && last < 0 {
		return nil, nil, fmt.Errorf("%w: none of the %d checkpoints in %s is signed under a key given (they name key %s)", ErrUnverifiable, len(entries), entries[0].File, entries[len(entries)-1].KeyID)
	}
	return entries[:last+1], entries[last+1:], nil
}

// ParsePublicKey reads a public key as `audit public-key` prints it: "KEYID:BASE64".
func ParsePublicKey(s string) (keyID string, pub ed25519.PublicKey, err error) {
	id, b64, ok := strings.Cut(strings.TrimSpace(s), ":")
	raw, derr := base64.StdEncoding.DecodeString(b64)
	if !ok || id == "" || derr != nil || len(raw) != ed25519.PublicKeySize {
		return "", nil, fmt.Errorf("%q is not a public key as `backoffice audit public-key` prints it (KEYID:BASE64 of 32 bytes)", s)
	}
	return id, ed25519.PublicKey(raw), nil
}

// FormatPublicKey is how `audit public-key` prints a key.
func FormatPublicKey(keyID string, pub ed25519.PublicKey) string {
	return keyID + ":" + base64.StdEncoding.EncodeToString(pub)
}
