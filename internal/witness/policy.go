// Package witness gets the audit log's checkpoints cosigned by witnesses and checks them against
// a policy. A witness is an independent party that cosigns a checkpoint only once it has checked
// that the checkpoint is consistent with the last one it cosigned for the same log, so that a log
// that shows one history to some and another to others, or rolls back, is caught by whoever
// checks the cosignatures. It speaks c2sp.org/tlog-witness (add-checkpoint), checks
// c2sp.org/tlog-cosignature cosignatures with transparency-dev/formats' verifiers, and reads
// policies in the c2sp.org/tlog-policy format (docs/compliance.md#witnesses).
package witness

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// The vkey signature types c2sp.org/tlog-cosignature defines for a cosigner's key: Ed25519
// (cosignature/v1) and ML-DSA-44. formats also takes a plain Ed25519 key (0x01) as a cosigner's,
// under another key hash; a policy refuses it, so that one key text means one key hash.
const (
	keyTypeEd25519Cosignature = 0x04
	keyTypeMLDSA44            = 0x06
)

// none is tlog-policy's predefined name for "no cosignature needed".
const none = "none"

// Witness is one witness of a policy: its name in the policy, its cosigner key in vkey form, and
// its submission prefix ("" when the policy gives none: its cosignatures are checked, it is not
// asked for any).
type Witness struct {
	Name string
	Key  string
	URL  string
	v    note.Verifier
}

// NewWitness makes the witness called name in a policy, whose cosigner key is vkey (type 0x04,
// Ed25519 cosignature/v1, or 0x06, ML-DSA-44) and whose submission prefix is rawURL ("" for none;
// else an absolute http or https URL).
func NewWitness(name, vkey, rawURL string) (Witness, error) {
	if name == "" || name == none || strings.ContainsAny(name, " \t\n") {
		return Witness{}, fmt.Errorf("witness name %q: want a word other than %q", name, none)
	}
	v, err := cosignatureVerifier(vkey)
	if err != nil {
		return Witness{}, fmt.Errorf("witness %s: key %q: %w", name, vkey, err)
	}
	if rawURL != "" {
		u, err := url.Parse(rawURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return Witness{}, fmt.Errorf("witness %s: URL %q: want an http or https URL without query or fragment, the witness's submission prefix", name, rawURL)
		}
	}
	return Witness{Name: name, Key: vkey, URL: rawURL, v: v}, nil
}

// Verifier checks the witness's cosignatures, for note.Open.
func (w Witness) Verifier() note.Verifier { return w.v }

// cosignatureVerifier is formats' verifier of a cosigner's vkey, which must be of a cosignature
// type and carry the key hash the key has: formats computes the hash and ignores the one written.
func cosignatureVerifier(vkey string) (note.Verifier, error) {
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 {
		return nil, errors.New("not a verifier key NAME+HASH+BASE64")
	}
	key, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(key) == 0 {
		return nil, errors.New("not a verifier key NAME+HASH+BASE64")
	}
	if key[0] != keyTypeEd25519Cosignature && key[0] != keyTypeMLDSA44 {
		return nil, fmt.Errorf("key type 0x%02x: want a cosigner's key, 0x%02x (Ed25519 cosignature/v1) or 0x%02x (ML-DSA-44)", key[0], keyTypeEd25519Cosignature, keyTypeMLDSA44)
	}
	v, err := fnote.NewVerifierForCosignatureV1(vkey)
	if err != nil {
		return nil, err
	}
	if hash, err := strconv.ParseUint(parts[1], 16, 32); err != nil || len(parts[1]) != 8 || uint32(hash) != v.KeyHash() {
		return nil, fmt.Errorf("key hash %q: the key's is %08x", parts[1], v.KeyHash())
	}
	return v, nil
}

// Policy is a set of witnesses and the quorum of them whose cosignatures make a checkpoint final.
type Policy struct {
	witnesses []Witness
	// quorum is met by a set of witness names; nil for "quorum none".
	quorum *group
}

// group is met when at least k of its members are: a member is a witness (name) or a group.
type group struct {
	k       int
	members []member
}

type member struct {
	witness string
	group   *group
}

func (g *group) met(signed map[string]bool) bool {
	n := 0
	for _, m := range g.members {
		if m.group != nil && m.group.met(signed) || m.group == nil && signed[m.witness] {
			n++
		}
	}
	return n >= g.k
}

// ParsePolicy reads a policy in the c2sp.org/tlog-policy format: lines `log VKEY [URL]`,
// `witness NAME VKEY [URL]`, `group NAME all|any|K MEMBER...` and one `quorum NAME` (a witness,
// a group or none), each naming only what lines above it define; comment lines start with #.
// Log lines are checked and otherwise ignored: the caller knows the log's key. Anything it does
// not understand is an error, never skipped. formats' witness.ParsePolicy reads the same lines
// but takes a threshold of 0 (met without any cosignature) and a member listed twice (one
// witness counted twice), and wants a URL on every witness line, which an auditor has no use for.
func ParsePolicy(text []byte) (*Policy, error) {
	if i := bytes.IndexFunc(text, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' || r == 0x7f }); i >= 0 {
		return nil, fmt.Errorf("policy: byte 0x%02x at offset %d: only tab and newline of the control characters are allowed", text[i], i)
	}
	p := &parser{policy: &Policy{}, names: map[string]member{}, keys: map[string]string{}}
	for i, line := range strings.Split(string(text), "\n") {
		fields := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if err := p.line(fields); err != nil {
			return nil, fmt.Errorf("policy line %d: %w", i+1, err)
		}
	}
	if !p.quorumSet {
		return nil, errors.New("policy: no quorum line (quorum NAME, or quorum none)")
	}
	return p.policy, nil
}

type parser struct {
	policy    *Policy
	names     map[string]member
	keys      map[string]string // a key's bytes to the name that has it
	quorumSet bool
}

func (p *parser) line(f []string) error {
	switch f[0] {
	case "log":
		return p.log(f[1:])
	case "witness":
		return p.witness(f[1:])
	case "group":
		return p.group(f[1:])
	case "quorum":
		return p.quorum(f[1:])
	}
	return fmt.Errorf("unknown keyword %q: want log, witness, group or quorum", f[0])
}

func (p *parser) log(args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return errors.New("want log VKEY [URL]")
	}
	if _, err := fnote.NewVerifier(args[0]); err != nil {
		return fmt.Errorf("log key %q: %w", args[0], err)
	}
	return p.uniqueKey(args[0], "a log")
}

func (p *parser) witness(args []string) error {
	if len(args) < 2 || len(args) > 3 {
		return errors.New("want witness NAME VKEY [URL]")
	}
	rawURL := ""
	if len(args) == 3 {
		rawURL = args[2]
	}
	if err := p.newName(args[0]); err != nil {
		return err
	}
	w, err := NewWitness(args[0], args[1], rawURL)
	if err != nil {
		return err
	}
	if err := p.uniqueKey(args[1], "witness "+w.Name); err != nil {
		return err
	}
	p.names[w.Name] = member{witness: w.Name}
	p.policy.witnesses = append(p.policy.witnesses, w)
	return nil
}

// uniqueKey refuses a key a line above already has: tlog-policy counts keys, not names, as
// distinct parties, so one key under two names would count twice.
func (p *parser) uniqueKey(vkey, who string) error {
	_, rest, _ := strings.Cut(vkey, "+")
	_, key, _ := strings.Cut(rest, "+")
	if prev, ok := p.keys[key]; ok {
		return fmt.Errorf("%s has the key of %s", who, prev)
	}
	p.keys[key] = who
	return nil
}

func (p *parser) newName(name string) error {
	if name == none {
		return fmt.Errorf("%q is reserved (quorum none)", none)
	}
	if _, ok := p.names[name]; ok {
		return fmt.Errorf("%q is defined twice", name)
	}
	return nil
}

func (p *parser) group(args []string) error {
	if len(args) < 3 {
		return errors.New("want group NAME all|any|K MEMBER (one or more)")
	}
	name, threshold, names := args[0], args[1], args[2:]
	if err := p.newName(name); err != nil {
		return err
	}
	g := &group{}
	seen := map[string]bool{}
	for _, n := range names {
		m, ok := p.names[n]
		if !ok {
			return fmt.Errorf("group %s: member %q is not defined on a line above", name, n)
		}
		if seen[n] {
			// Listed twice, one witness would count twice toward the threshold.
			return fmt.Errorf("group %s: member %q is listed twice", name, n)
		}
		seen[n] = true
		g.members = append(g.members, m)
	}
	switch threshold {
	case "all":
		g.k = len(g.members)
	case "any":
		g.k = 1
	default:
		k, err := strconv.ParseUint(threshold, 10, 16)
		if err != nil || k < 1 || int(k) > len(g.members) {
			// A threshold of 0 would be met by no cosignature at all.
			return fmt.Errorf("group %s: threshold %q: want all, any, or a number from 1 to %d", name, threshold, len(g.members))
		}
		g.k = int(k)
	}
	p.names[name] = member{group: g}
	return nil
}

func (p *parser) quorum(args []string) error {
	if len(args) != 1 {
		return errors.New("want quorum NAME")
	}
	if p.quorumSet {
		return errors.New("a second quorum line")
	}
	p.quorumSet = true
	if args[0] == none {
		return nil
	}
	m, ok := p.names[args[0]]
	if !ok {
		return fmt.Errorf("quorum %q is not defined on a line above", args[0])
	}
	p.policy.quorum = m.group
	if m.group == nil {
		p.policy.quorum = &group{k: 1, members: []member{m}}
	}
	return nil
}

// Witnesses lists the policy's witnesses, in the order of its lines.
func (p *Policy) Witnesses() []Witness { return append([]Witness(nil), p.witnesses...) }

// RequireURLs says which witness has no URL: serve asks every witness of its policy, an auditor
// only checks their cosignatures.
func (p *Policy) RequireURLs() error {
	for _, w := range p.witnesses {
		if w.URL == "" {
			return fmt.Errorf("witness %s has no URL: serve sends checkpoints to each witness's submission prefix, witness NAME VKEY URL", w.Name)
		}
	}
	return nil
}

// Met tells whether the witnesses named in signed (the policy's names) make the quorum.
func (p *Policy) Met(signed []string) bool {
	if p.quorum == nil {
		return true
	}
	set := map[string]bool{}
	for _, s := range signed {
		set[s] = true
	}
	return p.quorum.met(set)
}

// Verdict is what a policy says of a checkpoint: which of its witnesses cosigned it (in the
// policy's order) and whether they make the quorum.
type Verdict struct {
	Signed []string
	Met    bool
}

// Check opens msg, a checkpoint note, with the log's verifier and the policy's witnesses', after
// adding the signature lines cosignatures (AddCosignatures). It is an error if the log did not
// sign msg, or if any signature line under a key it knows (the log's or a witness's) does not
// verify: a note carrying a forged cosignature is refused, not counted short. Lines under other
// keys are ignored, as c2sp.org/tlog-witness asks.
func (p *Policy) Check(msg []byte, log note.Verifier, cosignatures ...[]byte) (Verdict, error) {
	if log == nil {
		return Verdict{}, errors.New("no log verifier: a checkpoint is checked against the log's key")
	}
	msg, err := AddCosignatures(msg, cosignatures...)
	if err != nil {
		return Verdict{}, err
	}
	vs := []note.Verifier{log}
	for _, w := range p.witnesses {
		vs = append(vs, w.v)
	}
	n, err := note.Open(msg, note.VerifierList(vs...))
	if err != nil {
		return Verdict{}, p.openError(err, log)
	}
	signedBy := map[keyID]note.Signature{}
	for _, s := range n.Sigs {
		signedBy[keyID{s.Name, s.Hash}] = s
	}
	if _, ok := signedBy[keyID{log.Name(), log.KeyHash()}]; !ok {
		return Verdict{}, fmt.Errorf("checkpoint: no signature by the log's key %s+%08x", log.Name(), log.KeyHash())
	}
	var v Verdict
	for _, w := range p.witnesses {
		s, ok := signedBy[keyID{w.v.Name(), w.v.KeyHash()}]
		if !ok {
			continue
		}
		if _, err := cosignatureTime(s); err != nil {
			return Verdict{}, fmt.Errorf("witness %s: %w", w.Name, err)
		}
		v.Signed = append(v.Signed, w.Name)
	}
	v.Met = p.Met(v.Signed)
	return v, nil
}

type keyID struct {
	name string
	hash uint32
}

// openError names whose signature failed note.Open.
func (p *Policy) openError(err error, log note.Verifier) error {
	var bad *note.InvalidSignatureError
	if errors.As(err, &bad) {
		for _, w := range p.witnesses {
			if w.v.Name() == bad.Name && w.v.KeyHash() == bad.Hash {
				return fmt.Errorf("witness %s: its cosignature on the checkpoint does not verify", w.Name)
			}
		}
		if log.Name() == bad.Name && log.KeyHash() == bad.Hash {
			return errors.New("checkpoint: the log's signature does not verify")
		}
	}
	var unverified *note.UnverifiedNoteError
	if errors.As(err, &unverified) {
		return fmt.Errorf("checkpoint: no signature by the log's key %s+%08x", log.Name(), log.KeyHash())
	}
	return fmt.Errorf("checkpoint: %w", err)
}
