package checkpoint

import (
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func key(seed byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed([]byte(strings.Repeat(string(rune('a'+seed)), ed25519.SeedSize)))
}

// chain writes checkpoints signed under the given keys, each naming the one before.
func chain(t *testing.T, path string, signers ...string) {
	t.Helper()
	var prev string
	for i, id := range signers {
		c := Checkpoint{Seq: int64(i + 1), Digest: strings.Repeat("ab", 32), Prev: prev, At: "2026-11-25T12:00:00Z", KeyID: id}
		c = c.Sign(key(id[1] - '0'))
		if err := Append(path, c); err != nil {
			t.Fatal(err)
		}
		prev = c.ID()
	}
}

func pub(id string) ed25519.PublicKey { return key(id[1] - '0').Public().(ed25519.PublicKey) }

// After a rotation the newest checkpoint, signed under the new key, vouches for those signed
// under the retired key before it; checkpoints after the last one a given key signed are left out.
func TestVouchedAcrossARotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	chain(t, path, "k1", "k1", "k2", "k3")
	entries, err := ReadFile(path)
	if err != nil || len(entries) != 4 || entries[2].Line != 3 {
		t.Fatalf("read: %+v %v", entries, err)
	}
	vouched, unvouched, err := Vouched(entries, map[string]ed25519.PublicKey{"k2": pub("k2")})
	if err != nil || len(vouched) != 3 || unvouched != 1 {
		t.Fatalf("vouched %d, unvouched %d, %v; want 3 and 1", len(vouched), unvouched, err)
	}
	if _, _, err := Vouched(entries, map[string]ed25519.PublicKey{"k9": pub("k9")}); !errors.Is(err, ErrUnverifiable) {
		t.Fatalf("no key given signed any: %v", err)
	}
	// A signature that does not hold under the key it names, or a line that does not name the one
	// before it, makes the file unverifiable.
	forged := entries[1]
	forged.Sig = entries[0].Sig
	if _, _, err := Vouched([]Entry{entries[0], forged}, map[string]ed25519.PublicKey{"k1": pub("k1")}); !errors.Is(err, ErrUnverifiable) {
		t.Fatalf("forged signature: %v", err)
	}
	if _, _, err := Vouched([]Entry{entries[0], entries[2]}, map[string]ed25519.PublicKey{"k2": pub("k2")}); !errors.Is(err, ErrUnverifiable) {
		t.Fatalf("a checkpoint removed from the middle: %v", err)
	}
}

// A last line cut short (a crash while appending) is left out; a damaged line elsewhere is named.
func TestReadFileTornAndDamagedLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	chain(t, path, "k1", "k1")
	good, _ := os.ReadFile(path)
	os.WriteFile(path, append(good, []byte(`{"v":1,"seq":3,"hea`)...), 0o600)
	if entries, err := ReadFile(path); err != nil || len(entries) != 2 {
		t.Fatalf("torn last line: %d entries, %v", len(entries), err)
	}
	os.WriteFile(path, append([]byte("not json\n"), good...), 0o600)
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("damaged line: %v", err)
	}
}
