// Package checkpoint holds the audit trail's signed checkpoints: statements, kept outside the
// database, that the trail held so many events, with such a Merkle tree root and chain digest
// (see docs/compliance.md). They are C2SP signed notes (c2sp.org/tlog-checkpoint), which tools
// nobody here wrote check; files of earlier releases' JSON lines still read. serve signs them;
// `audit verify` checks the database, or an export, against them. The package takes what it
// signs as values: it does not import the store.
package checkpoint

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// Label opens every message a checkpoint of version 1 (a JSON line, as releases before signed
// notes wrote them) signs; the "v1" names that format.
const Label = "backoffice audit checkpoint v1"

// Checkpoint is one checkpoint of a checkpoints file: a signed note (version 2, what Sign makes,
// c2sp.org/tlog-checkpoint), or a JSON line of version 1, which earlier releases wrote and which
// still verifies.
type Checkpoint struct {
	V int `json:"v"`
	// Seq is the newest event it covers (a note's tree size); Head that event's link (hex, "" for
	// an unlinked event); Digest the digest of the trail from seq 1 up to it (hex, see
	// auditlog.ChainDigest).
	Seq    int64  `json:"seq"`
	Head   string `json:"head"`
	Digest string `json:"digest"`
	// Prev is the id (ID) of the checkpoint before it in the same file, "" for the first.
	Prev string `json:"prev"`
	// At is when it was signed (RFC 3339, UTC); KeyID the master key whose checkpoint key signed.
	At    string `json:"at"`
	KeyID string `json:"keyId"`
	// Sig is a version 1 line's Ed25519 signature of Message, in standard base64.
	Sig string `json:"sig"`
	// Origin, Root and Note are a signed note's: the log's name, the Merkle tree's root hash at
	// size Seq, and the note as signed.
	Origin string    `json:"-"`
	Root   tlog.Hash `json:"-"`
	Note   []byte    `json:"-"`
}

// IsNote tells whether c is a signed note (else a version 1 line).
func (c Checkpoint) IsNote() bool { return len(c.Note) > 0 }

// Message is what a version 1 line's signature covers: the label and the fields, each on its
// own line.
func (c Checkpoint) Message() []byte {
	return []byte(strings.Join([]string{Label, strconv.FormatInt(c.Seq, 10), c.Head, c.Digest, c.Prev, c.At, c.KeyID}, "\n"))
}

// ID names the checkpoint: the SHA-256, in hex, of a note's text, or of a version 1 line's
// message. The next checkpoint's Prev.
func (c Checkpoint) ID() string {
	if c.IsNote() {
		return c.noteID()
	}
	sum := sha256.Sum256(c.Message())
	return hex.EncodeToString(sum[:])
}

// SignedBy tells whether pub made the signature: for a note, a signature line under its origin.
func (c Checkpoint) SignedBy(pub ed25519.PublicKey) bool {
	if len(pub) != ed25519.PublicKeySize {
		return false
	}
	if c.IsNote() {
		return c.noteSignedBy(pub)
	}
	sig, err := base64.StdEncoding.DecodeString(c.Sig)
	return err == nil && ed25519.Verify(pub, c.Message(), sig)
}

// Entry is a checkpoint as read from a file: where it was, for reports.
type Entry struct {
	Checkpoint
	File string
	Line int
}

// What names the entry in a report.
func (e Entry) What() string {
	if e.Line == 0 {
		return fmt.Sprintf("the checkpoint of %s (the last in %s)", e.At, e.File)
	}
	return fmt.Sprintf("the checkpoint of %s (%s line %d)", e.At, e.File, e.Line)
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

// StartsMidway is a note for entries, a whole file's checkpoints, whose first names a checkpoint
// before it (Prev), "" for a file from its start: a signer names only the checkpoint then last in
// its file, so the file lost its start (cut, or kept by a store that holds less history). Every
// checkpoint given is still checked, and what those before fixed the later ones fix too (a
// tree's root and the chain's digest cover every event before them); what is lost is the
// evidence the earlier ones were, e.g. of a history signed and later rewritten.
func StartsMidway(entries []Entry) string {
	if len(entries) == 0 || entries[0].Prev == "" {
		return ""
	}
	first := entries[0]
	return fmt.Sprintf("%s: its first checkpoint (%s) names one before it (prev %.16s) that the file does not hold: the file starts mid-way (cut at its start, or kept by a store that holds less history); the checkpoints given were checked, those before them were not given", first.File, first.What(), first.Prev)
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
