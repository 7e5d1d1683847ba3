package checkpoint

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// DefaultOrigin names the log in checkpoints when BACKOFFICE_AUDIT_ORIGIN is not set. A
// deployment sets its own (docs/compliance.md): two deployments that keep the default sign
// checkpoints an auditor cannot tell apart by name.
const DefaultOrigin = "backoffice.local/audit"

// The extension lines a checkpoint note carries after its root hash (c2sp.org/tlog-checkpoint),
// in this order: the HMAC chain's head and digest at the same size, the id of the checkpoint
// before it in the file, and when and under which master key it was signed.
const (
	extChain  = "chain"
	extPrev   = "prev"
	extSigned = "signed"
)

// none stands for an empty head or prev in an extension line.
const none = "-"

// Head is what a checkpoint states: the tree of the first Size events has root Root, and the
// HMAC chain at the same event has link Link (hex, "" for an unlinked event) and digest Digest.
// The caller signs only a head a walk of the chain verified just before.
type Head struct {
	Size   int64
	Root   tlog.Hash
	Link   string
	Digest []byte
}

// ValidOrigin says why origin cannot name the log: it is also the key name of the signature
// lines, so it follows the signed note's rules for key names (no spaces, no "+").
func ValidOrigin(origin string) error {
	bad := func(r rune) bool { return unicode.IsSpace(r) || r == '+' || !unicode.IsPrint(r) }
	// A checkpoints file tells a note from a version 1 line and from signature lines by how
	// they start.
	if origin == "" || !utf8.ValidString(origin) || strings.ContainsFunc(origin, bad) || strings.HasPrefix(origin, "{") || strings.HasPrefix(origin, "—") {
		return fmt.Errorf("origin %q: want a name without spaces or \"+\", such as %s", origin, DefaultOrigin)
	}
	return nil
}

// VerifierKey is the key, in golang.org/x/mod/sumdb/note's form (origin+hash+base64), that
// checks the checkpoints pub signs under origin: what `audit public-key --note` prints.
func VerifierKey(origin string, pub ed25519.PublicKey) (string, error) {
	if err := ValidOrigin(origin); err != nil {
		return "", err
	}
	return note.NewEd25519VerifierKey(origin, pub)
}

// Verifier is the note verifier of VerifierKey.
func Verifier(origin string, pub ed25519.PublicKey) (note.Verifier, error) {
	vkey, err := VerifierKey(origin, pub)
	if err != nil {
		return nil, err
	}
	return note.NewVerifier(vkey)
}

// signer is the note signer of key under origin, made from the standard private key form so
// that its key hash is note's own.
func signer(origin string, key ed25519.PrivateKey) (note.Signer, error) {
	vkey, err := VerifierKey(origin, key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	_, rest, _ := strings.Cut(vkey, "+")
	hash, _, _ := strings.Cut(rest, "+")
	skey := "PRIVATE+KEY+" + origin + "+" + hash + "+" + base64.StdEncoding.EncodeToString(append([]byte{1}, key.Seed()...))
	return note.NewSigner(skey)
}

// Sign makes the checkpoint of h, a c2sp.org/tlog-checkpoint signed note for origin, naming prev
// (the id of the checkpoint before it, "" for the first), signed at at under key, the checkpoint
// key of the master key keyID.
func Sign(h Head, origin, prev string, at time.Time, keyID string, key ed25519.PrivateKey) (Checkpoint, error) {
	if h.Size < 1 {
		return Checkpoint{}, errors.New("audit checkpoints: the trail is empty: nothing to sign")
	}
	if keyID == "" || strings.ContainsFunc(keyID, unicode.IsSpace) {
		return Checkpoint{}, fmt.Errorf("audit checkpoints: key id %q cannot be written in a checkpoint", keyID)
	}
	s, err := signer(origin, key)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("audit checkpoints: %w", err)
	}
	c := Checkpoint{V: 2, Origin: origin, Seq: h.Size, Root: h.Root, Head: h.Link, Digest: hex.EncodeToString(h.Digest),
		Prev: prev, At: at.UTC().Format(time.RFC3339Nano), KeyID: keyID}
	msg, err := note.Sign(&note.Note{Text: c.text()}, s)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("audit checkpoints: %w", err)
	}
	c.Note = msg
	return c, nil
}

// text is the note's text: the checkpoint's three lines, then the extension lines.
func (c Checkpoint) text() string {
	cp := log.Checkpoint{Origin: c.Origin, Size: uint64(c.Seq), Hash: c.Root[:]}
	return string(cp.Marshal()) + fmt.Sprintf("%s %s %s\n%s %s\n%s %s %s\n",
		extChain, orNone(c.Head), c.Digest, extPrev, orNone(c.Prev), extSigned, c.At, c.KeyID)
}

func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}

func fromNone(s string) string {
	if s == none {
		return ""
	}
	return s
}

// noteID is a note checkpoint's id: the SHA-256 of its text, so that a cosignature added later
// does not change it.
func (c Checkpoint) noteID() string {
	sum := sha256.Sum256([]byte(c.text()))
	return hex.EncodeToString(sum[:])
}

// noteSignedBy tells whether pub signed the note under its origin.
func (c Checkpoint) noteSignedBy(pub ed25519.PublicKey) bool {
	v, err := Verifier(c.Origin, pub)
	if err != nil {
		return false
	}
	_, err = note.Open(c.Note, note.VerifierList(v))
	return err == nil
}

// parseNote reads a checkpoint note as a file holds it: well formed, with at least one signature
// line, none checked (SignedBy does). The error says what is wrong.
func parseNote(msg []byte) (*Checkpoint, error) {
	_, err := note.Open(msg, note.VerifierList())
	var unverified *note.UnverifiedNoteError
	if !errors.As(err, &unverified) {
		return nil, fmt.Errorf("not a signed note: %v", err)
	}
	n := unverified.Note
	for _, sig := range n.UnverifiedSigs {
		// The shortest signature a checkpoint carries is an Ed25519 one, after its key hash: one
		// shorter is a line cut short that happens to decode.
		if b, err := base64.StdEncoding.DecodeString(sig.Base64); err != nil || len(b) < 4+ed25519.SignatureSize {
			return nil, errors.New("a signature line cut short")
		}
	}
	var cp log.Checkpoint
	rest, err := cp.Unmarshal([]byte(n.Text))
	if err != nil {
		return nil, err
	}
	if len(cp.Hash) != tlog.HashSize || cp.Size < 1 || cp.Size > 1<<62 {
		return nil, errors.New("invalid checkpoint: root hash or size")
	}
	c := &Checkpoint{V: 2, Origin: cp.Origin, Seq: int64(cp.Size), Note: bytes.Clone(msg)}
	copy(c.Root[:], cp.Hash)
	ext := strings.Split(strings.TrimSuffix(string(rest), "\n"), "\n")
	if len(ext) != 3 {
		return nil, errors.New("invalid checkpoint: want the chain, prev and signed extension lines")
	}
	chain, prev, signed := strings.Fields(ext[0]), strings.Fields(ext[1]), strings.Fields(ext[2])
	if len(chain) != 3 || chain[0] != extChain || len(prev) != 2 || prev[0] != extPrev || len(signed) != 3 || signed[0] != extSigned {
		return nil, errors.New("invalid checkpoint: malformed extension lines")
	}
	c.Head, c.Digest, c.Prev, c.At, c.KeyID = fromNone(chain[1]), chain[2], fromNone(prev[1]), signed[1], signed[2]
	if c.text() != n.Text {
		return nil, errors.New("invalid checkpoint: not in the form this service writes")
	}
	return c, nil
}

// tornNote tells whether msg, which parseNote refused, is what a write cut short leaves: a
// prefix of a checkpoint note, up to a cut in its last line.
func tornNote(msg []byte) bool {
	text, sigs, signed := bytes.Cut(msg, []byte("\n\n"))
	lines := strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")
	if signed {
		sl := strings.Split(strings.TrimSuffix(string(sigs), "\n"), "\n")
		for _, l := range sl[:len(sl)-1] {
			if !sigLine(l) {
				return false
			}
		}
		return len(lines) == 6 && textPrefix(lines, false) && isSigLine([]byte(sl[len(sl)-1]))
	}
	return len(lines) <= 6 && textPrefix(lines, true)
}

// textPrefix tells whether lines begin a checkpoint note's text; cut: the last may be cut short.
func textPrefix(lines []string, cut bool) bool {
	words := []string{"", "", "", extChain + " ", extPrev + " ", extSigned + " "}
	for i, l := range lines {
		last := cut && i == len(lines)-1
		switch i {
		case 0:
			if ValidOrigin(l) != nil {
				return false
			}
		case 1:
			if _, err := strconv.ParseUint(l, 10, 64); err != nil && !(last && l == "") {
				return false
			}
		case 2:
			if strings.Trim(l, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") != "" {
				return false
			}
		default:
			if !strings.HasPrefix(l, words[i]) && !(last && strings.HasPrefix(words[i], l)) {
				return false
			}
		}
	}
	return true
}

// sigLine tells whether l is a whole signature line: "— name base64".
func sigLine(l string) bool {
	f := strings.Fields(l)
	if len(f) != 3 || f[0] != "—" {
		return false
	}
	_, err := base64.StdEncoding.DecodeString(f[2])
	return err == nil
}
