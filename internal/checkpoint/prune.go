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

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// PruneLabel is the second line of a prune note, after the log's origin: it tells the note from a
// checkpoint (whose second line is a tree size) and names the format.
const PruneLabel = "backoffice audit prune v1"

// Prune is a signed statement that the audit trail's events below seq Below were removed by the
// retention policy, after they were archived: a C2SP signed note under the log's checkpoint key,
// whose text is (docs/compliance.md, "Retention"):
//
//	<origin>
//	backoffice audit prune v1
//	below <N>
//	tree <N-1> <root, base64>
//	chain <link of event N-1, hex, or -> <digest of the trail up to N-1, hex>
//	archive <SHA-256 of the archive file, hex>
//	signed <RFC 3339 time> <master key id>
//
// The tree line is the audit tree of the events pruned (its stored hashes all stay); the chain
// line is where the HMAC chain and its digest carry on from at event N, which a walk of the
// trail starts from instead of the genesis.
type Prune struct {
	Origin   string
	Below    int64
	Root     tlog.Hash
	Link     string
	Digest   []byte
	Archive  [sha256.Size]byte
	At       string
	KeyID    string
	Note     []byte
	treeSize int64
}

// text is the note's text.
func (p Prune) text() string {
	return fmt.Sprintf("%s\n%s\nbelow %d\ntree %d %s\nchain %s %s\narchive %s\nsigned %s %s\n",
		p.Origin, PruneLabel, p.Below, p.Below-1, base64.StdEncoding.EncodeToString(p.Root[:]),
		orNone(p.Link), hex.EncodeToString(p.Digest), hex.EncodeToString(p.Archive[:]), p.At, p.KeyID)
}

// SignPrune signs p (its Note and At set here) under key, the checkpoint key of the master key
// p.KeyID, at at. The caller signs only what a walk of the trail verified just before.
func SignPrune(p Prune, at time.Time, key ed25519.PrivateKey) (Prune, error) {
	if p.Below < 2 {
		return Prune{}, errors.New("audit prune: nothing below seq 2 to prune")
	}
	if p.KeyID == "" || strings.ContainsFunc(p.KeyID, unicode.IsSpace) {
		return Prune{}, fmt.Errorf("audit prune: key id %q cannot be written in a note", p.KeyID)
	}
	if len(p.Digest) != sha256.Size {
		return Prune{}, errors.New("audit prune: the digest is not 32 bytes")
	}
	s, err := signer(p.Origin, key)
	if err != nil {
		return Prune{}, fmt.Errorf("audit prune: %w", err)
	}
	p.At = at.UTC().Format(time.RFC3339Nano)
	msg, err := note.Sign(&note.Note{Text: p.text()}, s)
	if err != nil {
		return Prune{}, fmt.Errorf("audit prune: %w", err)
	}
	p.Note, p.treeSize = msg, p.Below-1
	return p, nil
}

// ParsePrune reads a prune note as SignPrune writes it, its signatures not checked (SignedBy
// does). The error says what is wrong.
func ParsePrune(msg []byte) (Prune, error) {
	_, err := note.Open(msg, note.VerifierList())
	var unverified *note.UnverifiedNoteError
	if !errors.As(err, &unverified) {
		return Prune{}, fmt.Errorf("not a signed note: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(unverified.Note.Text, "\n"), "\n")
	if len(lines) != 7 || lines[1] != PruneLabel {
		return Prune{}, errors.New("not a prune note (" + PruneLabel + ")")
	}
	bad := errors.New("invalid prune note: malformed lines")
	p := Prune{Origin: lines[0], Note: bytes.Clone(msg)}
	below, ok1 := strings.CutPrefix(lines[2], "below ")
	tree, chain, archive, signed := strings.Fields(lines[3]), strings.Fields(lines[4]), strings.Fields(lines[5]), strings.Fields(lines[6])
	if !ok1 || len(tree) != 3 || tree[0] != "tree" || len(chain) != 3 || chain[0] != "chain" || len(archive) != 2 || archive[0] != "archive" || len(signed) != 3 || signed[0] != "signed" {
		return Prune{}, bad
	}
	var err1, err2, err3, err4, err5 error
	p.Below, err1 = strconv.ParseInt(below, 10, 64)
	p.treeSize, err2 = strconv.ParseInt(tree[1], 10, 64)
	root, err3 := base64.StdEncoding.DecodeString(tree[2])
	p.Digest, err4 = hex.DecodeString(chain[2])
	sum, err5 := hex.DecodeString(archive[1])
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil || p.Below < 2 || p.treeSize != p.Below-1 || len(root) != tlog.HashSize || len(p.Digest) != sha256.Size || len(sum) != sha256.Size {
		return Prune{}, bad
	}
	copy(p.Root[:], root)
	copy(p.Archive[:], sum)
	p.Link, p.At, p.KeyID = fromNone(chain[1]), signed[1], signed[2]
	if p.Link != "" {
		if l, err := hex.DecodeString(p.Link); err != nil || len(l) != sha256.Size {
			return Prune{}, bad
		}
	}
	if p.text() != unverified.Note.Text {
		return Prune{}, errors.New("invalid prune note: not in the form this service writes")
	}
	// What SignPrune would not sign: an origin it refuses, a time not in the form it writes.
	if err := ValidOrigin(p.Origin); err != nil {
		return Prune{}, fmt.Errorf("invalid prune note: %w", err)
	}
	if at, err := time.Parse(time.RFC3339Nano, p.At); err != nil || at.UTC().Format(time.RFC3339Nano) != p.At {
		return Prune{}, fmt.Errorf("invalid prune note: signed at %q, not a time in UTC as RFC 3339 writes it", p.At)
	}
	return p, nil
}

// SameCut tells whether p and o state the same prune: the same log, seq, tree, chain and
// archive, whoever signed them and when.
func (p Prune) SameCut(o Prune) bool {
	return p.Origin == o.Origin && p.Below == o.Below && p.Root == o.Root && p.Link == o.Link &&
		bytes.Equal(p.Digest, o.Digest) && p.Archive == o.Archive
}

// SignedBy tells whether pub signed the note under its origin.
func (p Prune) SignedBy(pub ed25519.PublicKey) bool {
	if len(pub) != ed25519.PublicKeySize {
		return false
	}
	v, err := Verifier(p.Origin, pub)
	if err != nil {
		return false
	}
	_, err = note.Open(p.Note, note.VerifierList(v))
	return err == nil
}
