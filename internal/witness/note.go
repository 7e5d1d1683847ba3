package witness

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/transparency-dev/formats/log"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// maxSignatures is how many signature lines note.Open reads before it calls a note malformed.
const maxSignatures = 100

// sigPrefix opens a signed note's signature line (c2sp.org/signed-note).
const sigPrefix = "— "

// AddCosignatures returns msg, a signed note, with the signature lines of each of cosignatures
// added after its own: a witness's answer, or Cosignature.Lines. A line under a key (name and key
// hash) that msg already has a line of replaces that line, so that note.Open, which reads only
// the first line of a key, reads the one added. Nothing is verified here: Check and the client
// verify.
func AddCosignatures(msg []byte, cosignatures ...[]byte) ([]byte, error) {
	text, lines, err := splitNote(msg)
	if err != nil {
		return nil, err
	}
	for _, c := range cosignatures {
		add, err := signatureLines(c)
		if err != nil {
			return nil, fmt.Errorf("cosignature: %w", err)
		}
		for _, l := range add {
			lines = replaceOrAppend(lines, l)
		}
	}
	if len(lines) > maxSignatures {
		return nil, fmt.Errorf("a note of %d signature lines: note.Open reads at most %d", len(lines), maxSignatures)
	}
	out := bytes.NewBuffer(append([]byte(nil), text...))
	out.WriteString("\n")
	for _, l := range lines {
		out.WriteString(l.text + "\n")
	}
	return out.Bytes(), nil
}

// sigLine is one signature line, without its newline, and the key it names.
type sigLine struct {
	text string
	key  keyID
}

func replaceOrAppend(lines []sigLine, l sigLine) []sigLine {
	for i := range lines {
		if lines[i].key == l.key {
			lines[i] = l
			return lines
		}
	}
	return append(lines, l)
}

// splitNote cuts a signed note into its text (up to and with its last newline) and its
// signature lines.
func splitNote(msg []byte) (text []byte, lines []sigLine, err error) {
	i := bytes.LastIndex(msg, []byte("\n\n"))
	if i < 0 {
		return nil, nil, errors.New("not a signed note: no blank line before signature lines")
	}
	lines, err = signatureLines(msg[i+2:])
	if err != nil {
		return nil, nil, fmt.Errorf("not a signed note: %w", err)
	}
	return msg[:i+1], lines, nil
}

// signatureLines reads b as signed-note signature lines, each ending in a newline.
func signatureLines(b []byte) ([]sigLine, error) {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, errors.New("want signature lines, each ending in a newline")
	}
	var out []sigLine
	for _, l := range strings.Split(string(b[:len(b)-1]), "\n") {
		key, ok := parseSigLine(l)
		if !ok {
			return nil, fmt.Errorf("%q is not a signature line (— NAME BASE64)", truncate(l))
		}
		out = append(out, sigLine{text: l, key: key})
	}
	return out, nil
}

func parseSigLine(l string) (keyID, bool) {
	rest, ok := strings.CutPrefix(l, sigPrefix)
	if !ok {
		return keyID{}, false
	}
	name, b64, ok := strings.Cut(rest, " ")
	sig, err := base64.StdEncoding.DecodeString(b64)
	if !ok || name == "" || strings.ContainsAny(name, " \t+") || err != nil || len(sig) < 5 {
		return keyID{}, false
	}
	return keyID{name, binary.BigEndian.Uint32(sig)}, true
}

// checkpointSize is the tree size of msg, a checkpoint note.
func checkpointSize(msg []byte) (int64, error) {
	text, _, err := splitNote(msg)
	if err != nil {
		return 0, err
	}
	var c log.Checkpoint
	if _, err := c.Unmarshal(text); err != nil {
		return 0, fmt.Errorf("not a checkpoint: %w", err)
	}
	if c.Size > 1<<62 {
		return 0, fmt.Errorf("checkpoint size %d out of range", c.Size)
	}
	return int64(c.Size), nil
}

// cosignatureTime is when a cosignature says it was made. c2sp.org/tlog-witness asks a witness
// for a timestamp; one of zero makes no statement that this is the newest tree it saw.
func cosignatureTime(s note.Signature) (time.Time, error) {
	t, err := fnote.CoSigV1Timestamp(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("cosignature: %w", err)
	}
	if t.Unix() == 0 {
		return time.Time{}, errors.New("cosignature without a timestamp")
	}
	return t, nil
}

// truncate shortens what a peer sent for an error message.
func truncate(s string) string {
	const max = 200
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
