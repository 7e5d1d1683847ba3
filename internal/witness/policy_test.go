package witness

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// policyText is a policy of the given witness keys (w1, w2, ...) and then rest.
func policyText(keys []*cosigner, rest string) string {
	var b strings.Builder
	for i, k := range keys {
		b.WriteString("witness w" + string(rune('1'+i)) + " " + k.vkey + " https://w" + string(rune('1'+i)) + ".test/\n")
	}
	return b.String() + rest
}

func keysOf(t *testing.T, n int) []*cosigner {
	var keys []*cosigner
	for i := range n {
		keys = append(keys, newCosigner(t, "witness.test/w"+string(rune('1'+i))))
	}
	return keys
}

// TestPolicyQuorum: groups with all, any and a number, nested, and a single witness or none as
// the quorum, as c2sp.org/tlog-policy defines them.
func TestPolicyQuorum(t *testing.T) {
	keys := keysOf(t, 4)
	for _, tc := range []struct {
		rest string
		met  map[string]bool // signers, comma separated: met
	}{
		{"quorum none\n", map[string]bool{"": true}},
		{"quorum w2\n", map[string]bool{"": false, "w1": false, "w2": true}},
		{"group g any w1 w2\nquorum g\n", map[string]bool{"": false, "w1": true, "w3": false}},
		{"group g all w1 w2\nquorum g\n", map[string]bool{"w1": false, "w1,w2": true}},
		{"group g 2 w1 w2 w3\nquorum g\n", map[string]bool{"w1": false, "w1,w3": true, "w4": false}},
		{"group a any w1 w2\ngroup b any w3 w4\ngroup both all a b\nquorum both\n",
			map[string]bool{"w1,w2": false, "w1,w4": true, "w3,w4": false}},
	} {
		p, err := ParsePolicy([]byte(policyText(keys, tc.rest)))
		if err != nil {
			t.Fatalf("%q: %v", tc.rest, err)
		}
		for signers, want := range tc.met {
			var signed []string
			if signers != "" {
				signed = strings.Split(signers, ",")
			}
			if got := p.Met(signed); got != want {
				t.Errorf("%q signed by %q: met %v, want %v", tc.rest, signers, got, want)
			}
		}
	}
}

// TestPolicyText: what the format allows besides the lines: comments, tabs, log lines, witnesses
// without a URL.
func TestPolicyText(t *testing.T) {
	keys := keysOf(t, 2)
	_, logKey, err := note.GenerateKey(rand.Reader, "backoffice.test/audit")
	if err != nil {
		t.Fatal(err)
	}
	text := "# the audit log's witnesses\n\n  # indented comment\nlog " + logKey + "\n" +
		"witness\tw1 \t" + keys[0].vkey + " https://w1.test/prefix\n" +
		"witness w2 " + keys[1].vkey + "\n" +
		"group g any w1 w2\nquorum g"
	p, err := ParsePolicy([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	ws := p.Witnesses()
	if len(ws) != 2 || ws[0].Name != "w1" || ws[0].URL != "https://w1.test/prefix" || ws[1].URL != "" || ws[1].Key != keys[1].vkey {
		t.Fatalf("witnesses %+v", ws)
	}
	if err := p.RequireURLs(); err == nil || !strings.Contains(err.Error(), "witness w2") {
		t.Errorf("RequireURLs: %v; want w2 named", err)
	}
}

// TestPolicyErrors: a policy that says anything other than what the format allows is refused,
// each rule on its own.
func TestPolicyErrors(t *testing.T) {
	keys := keysOf(t, 3)
	_, logKey, err := note.GenerateKey(rand.Reader, "backoffice.test/audit")
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := note.NewEd25519VerifierKey("witness.test/w9", keys[2].priv.Public().(ed25519.PublicKey))
	parts := strings.SplitN(keys[2].vkey, "+", 3)
	wrongHash := parts[0] + "+00000000+" + parts[2]
	short := parts[0] + "+" + parts[1] + "+" + base64.StdEncoding.EncodeToString([]byte{keyTypeEd25519Cosignature, 1, 2})
	for _, tc := range []struct{ rest, want string }{
		{"", "no quorum line"},
		{"quorum w1\nquorum w2\n", "a second quorum line"},
		{"quorum w9\n", `quorum "w9" is not defined`},
		{"quorum g\ngroup g any w1\n", `quorum "g" is not defined`},
		{"group g 0 w1 w2\nquorum g\n", `threshold "0"`},
		{"group g 3 w1 w2\nquorum g\n", `threshold "3"`},
		{"group g -1 w1 w2\nquorum g\n", `threshold "-1"`},
		{"group g two w1 w2\nquorum g\n", `threshold "two"`},
		{"group g 2 w1 w1\nquorum g\n", `member "w1" is listed twice`},
		{"group g any w1 h\ngroup h any w2\nquorum g\n", `member "h" is not defined`},
		{"group g any\nquorum none\n", "want group NAME"},
		{"group w1 any w2\nquorum w1\n", `"w1" is defined twice`},
		{"group none any w2\nquorum none\n", `"none" is reserved`},
		{"witness w9 " + keys[0].vkey + "\nquorum none\n", "has the key of witness w1"},
		{"witness w9 " + plain + "\nquorum none\n", "key type 0x01"},
		{"witness w9 " + wrongHash + "\nquorum none\n", "key hash"},
		{"witness w9 " + short + "\nquorum none\n", "malformed verifier"},
		{"witness w9 notakey\nquorum none\n", "not a verifier key"},
		{"witness w9 " + keys[2].vkey + " ftp://w9.test/\nquorum none\n", "want an http or https URL"},
		{"witness w9 " + keys[2].vkey + " https://w9.test/?a=b\nquorum none\n", "want an http or https URL"},
		{"witness w9 " + keys[2].vkey + " https://w9.test/ extra\nquorum none\n", "want witness NAME VKEY [URL]"},
		{"log notakey\nquorum none\n", "log key"},
		{"log " + logKey + "\nlog " + logKey + "\nquorum none\n", "has the key of a log"},
		{"witness w9 " + keys[2].vkey + "\r\nquorum none\n", "byte 0x0d"},
		{"quorum none # trailing words\n", "want quorum NAME"},
		{"witnesses w9 x\nquorum none\n", `unknown keyword "witnesses"`},
	} {
		_, err := ParsePolicy([]byte(policyText(keys[:2], tc.rest)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want an error with %q", tc.rest, err, tc.want)
		}
	}
}

// TestCheck: the log's signature is required, every cosignature under a policy key must verify,
// and the verdict names the witnesses that cosigned.
func TestCheck(t *testing.T) {
	l := newTestLog(t, origin, 9, "a", nil, nil)
	keys := keysOf(t, 3)
	p, err := ParsePolicy([]byte(policyText(keys, "group g 2 w1 w2 w3\nquorum g\n")))
	if err != nil {
		t.Fatal(err)
	}
	msg := l.checkpoint(t, 9)
	text := msg[:bytes.LastIndex(msg, []byte("\n\n"))+1]
	stranger := newCosigner(t, "witness.test/stranger")

	v, err := p.Check(msg, l.verifier, keys[0].lineAt(text, 1700000000))
	if err != nil || strings.Join(v.Signed, ",") != "w1" || v.Met {
		t.Fatalf("one cosignature: %+v %v", v, err)
	}
	v, err = p.Check(msg, l.verifier, keys[2].lineAt(text, 1700000000), stranger.lineAt(text, 1700000000), keys[0].lineAt(text, 1700000001))
	if err != nil || strings.Join(v.Signed, ",") != "w1,w3" || !v.Met {
		t.Fatalf("two and a stranger's: %+v %v", v, err)
	}

	forged := flipLastByte(keys[1].lineAt(text, 1700000000))
	if _, err := p.Check(msg, l.verifier, keys[0].lineAt(text, 1700000000), forged); err == nil || !strings.Contains(err.Error(), "witness w2") {
		t.Errorf("a forged cosignature: %v; want an error naming w2", err)
	}
	if _, err := p.Check(msg, l.verifier, keys[1].lineAt(text, 0)); err == nil || !strings.Contains(err.Error(), "witness w2") {
		t.Errorf("a cosignature without a timestamp: %v; want an error naming w2", err)
	}
	other := newTestLog(t, origin, 9, "a", nil, nil)
	if _, err := p.Check(msg, other.verifier, keys[0].lineAt(text, 1700000000), keys[1].lineAt(text, 1700000000)); err == nil || !strings.Contains(err.Error(), "no signature by the log's key") {
		t.Errorf("another log key: %v; want refused", err)
	}
	tampered := bytes.Replace(msg, []byte("\n9\n"), []byte("\n8\n"), 1)
	if _, err := p.Check(tampered, l.verifier); err == nil || !strings.Contains(err.Error(), "log's signature does not verify") {
		t.Errorf("a changed checkpoint: %v; want refused", err)
	}
	if _, err := p.Check(msg, l.verifier, []byte("not a line\n")); err == nil {
		t.Errorf("a cosignature that is not a signature line: accepted")
	}
}

// TestAddCosignatures: lines are added after the note's, one under a key the note has replaces
// it, and what note.Open cannot read is refused.
func TestAddCosignatures(t *testing.T) {
	l := newTestLog(t, origin, 9, "a", nil, nil)
	key := newCosigner(t, "witness.test/w1")
	msg := l.checkpoint(t, 9)
	text := msg[:bytes.LastIndex(msg, []byte("\n\n"))+1]
	first, second := key.lineAt(text, 1700000000), key.lineAt(text, 1700000001)
	once, err := AddCosignatures(msg, first)
	if err != nil {
		t.Fatal(err)
	}
	twice, err := AddCosignatures(once, second)
	if err != nil {
		t.Fatal(err)
	}
	if want := append(append([]byte(nil), msg...), second...); !bytes.Equal(twice, want) {
		t.Errorf("the newer line replaces the older:\n%s\nwant\n%s", twice, want)
	}
	w := witnessOf(t, "w1", key, "")
	if n, err := note.Open(twice, note.VerifierList(l.verifier, w.Verifier())); err != nil || len(n.Sigs) != 2 {
		t.Errorf("note.Open: %v", err)
	}
	if _, err := AddCosignatures(msg, []byte("— witness.test/w1 AAAA")); err == nil {
		t.Errorf("a line without its newline: accepted")
	}
	if _, err := AddCosignatures([]byte("no signatures\n"), first); err == nil {
		t.Errorf("a text that is not a signed note: accepted")
	}
	var many [][]byte
	for range maxSignatures {
		many = append(many, newCosigner(t, "witness.test/many").lineAt(text, 1700000000))
	}
	if _, err := AddCosignatures(msg, many...); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("more lines than note.Open reads: %v", err)
	}
}

// flipLastByte changes the last byte of a signature line's signature.
func flipLastByte(line []byte) []byte {
	f := strings.Fields(string(line))
	sig, _ := base64.StdEncoding.DecodeString(f[2])
	sig[len(sig)-1] ^= 1
	return []byte(f[0] + " " + f[1] + " " + base64.StdEncoding.EncodeToString(sig) + "\n")
}
