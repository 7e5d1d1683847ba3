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

// Sign sets the version and the signature.
func (c Checkpoint) Sign(key ed25519.PrivateKey) Checkpoint {
	c.V = 1
	c.Sig = base64.StdEncoding.EncodeToString(ed25519.Sign(key, c.Message()))
	return c
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

// Append writes c as one line at the end of the file at path (made if missing, mode 0600), and
// syncs it to disk before it returns.
func Append(path string, c Checkpoint) error {
	line, err := json.Marshal(c)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit checkpoints: %w", err)
	}
	_, err = f.Write(append(line, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("audit checkpoints: %s: %w", path, err)
	}
	return nil
}

// ReadFile reads a checkpoints file. A last line with no newline (a write cut short by a crash)
// is left out; any other line that is not a checkpoint is an error naming it.
func ReadFile(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit checkpoints: %w", err)
	}
	defer f.Close()
	return read(f, path)
}

func read(r io.Reader, name string) ([]Entry, error) {
	br := bufio.NewReader(r)
	var out []Entry
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return out, nil // a torn last line, or none
		}
		if err != nil {
			return nil, fmt.Errorf("audit checkpoints: %s: %w", name, err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var c Checkpoint
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil || c.V != 1 {
			return nil, fmt.Errorf("audit checkpoints: %s line %d: not a checkpoint of version 1", name, n)
		}
		out = append(out, Entry{Checkpoint: c, File: name, Line: n})
	}
}

// ErrUnverifiable marks checkpoints that cannot be checked: none signed under a key given, or
// the file does not hold together. It is neither intact nor broken.
var ErrUnverifiable = errors.New("audit checkpoints cannot be checked")

// Vouched checks a file's checkpoints and returns those it can vouch for. Each must name the one
// before it (Prev), so the newest whose signature holds under one of keys vouches for every
// checkpoint before it, whatever key signed those (a key since retired). A signature that does
// not hold under the key it names, a broken Prev, or no checkpoint signed under a key given, is
// ErrUnverifiable; checkpoints after the last one vouched for are left out and counted.
func Vouched(entries []Entry, keys map[string]ed25519.PublicKey) (vouched []Entry, unvouched int, err error) {
	last := -1
	for i, e := range entries {
		if i > 0 && e.Prev != entries[i-1].ID() {
			return nil, 0, fmt.Errorf("%w: %s does not name the one before it: the file was altered", ErrUnverifiable, e.What())
		}
		pub, ok := keys[e.KeyID]
		if !ok {
			continue
		}
		if !e.SignedBy(pub) {
			return nil, 0, fmt.Errorf("%w: the signature of %s does not hold under key %s: forged or altered", ErrUnverifiable, e.What(), e.KeyID)
		}
		last = i
	}
	if len(entries) > 0 && last < 0 {
		return nil, 0, fmt.Errorf("%w: none of the %d checkpoints in %s is signed under a key given (they name key %s)", ErrUnverifiable, len(entries), entries[0].File, entries[len(entries)-1].KeyID)
	}
	return entries[:last+1], len(entries) - last - 1, nil
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
