package checkpoint

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func key(seed byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed([]byte(strings.Repeat(string(rune('a'+seed)), ed25519.SeedSize)))
}

// signed is c signed under the key of its KeyID, as anyone holding that key can sign: this
// package's Sign takes only a trail a walk verified.
func signed(c Checkpoint) Checkpoint {
	c.V = 1
	c.Sig = base64.StdEncoding.EncodeToString(ed25519.Sign(key(c.KeyID[1]-'0'), c.Message()))
	return c
}

// chain appends checkpoints signed under the given keys, each naming the one before it in the
// file.
func chain(t *testing.T, path string, signers ...string) {
	t.Helper()
	for i, id := range signers {
		_, err := Append(path, func(prev string) (Checkpoint, error) {
			return signed(Checkpoint{Seq: int64(i + 1), Digest: strings.Repeat("ab", 32), Prev: prev, At: "2026-11-25T12:00:00Z", KeyID: id}), nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func pub(id string) ed25519.PublicKey { return key(id[1] - '0').Public().(ed25519.PublicKey) }

// After a rotation the newest checkpoint, signed under the new key, vouches for those signed
// under the retired key before it; checkpoints after the last one a given key signed are left out.
func TestVouchedAcrossARotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	chain(t, path, "k1", "k1", "k2", "k3")
	file, err := ReadFile(path)
	entries := file.Entries
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

// A line a write left unfinished (a crash, a full disk), at the end or, after more appends, in
// the middle, is listed and left out, and the next append starts on a line of its own naming the
// last whole checkpoint; a damaged line that is not a cut-short checkpoint is named.
func TestReadFileTornAndDamagedLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	chain(t, path, "k1", "k1")
	good, _ := os.ReadFile(path)
	os.WriteFile(path, append(good, []byte(`{"v":1,"seq":3,"hea`)...), 0o600)
	if file, err := ReadFile(path); err != nil || len(file.Entries) != 2 || !slices.Equal(file.Torn, []int{3}) {
		t.Fatalf("torn last line: %+v, %v", file, err)
	}
	chain(t, path, "k1")
	file, err := ReadFile(path)
	if err != nil || len(file.Entries) != 3 || !slices.Equal(file.Torn, []int{3}) || file.Entries[2].Line != 4 {
		t.Fatalf("appended after a torn line: %+v, %v", file, err)
	}
	if _, _, err := Vouched(file.Entries, map[string]ed25519.PublicKey{"k1": pub("k1")}); err != nil {
		t.Fatalf("the checkpoint after a torn line names the one before it: %v", err)
	}
	// An older release appended onto the torn line itself: the whole checkpoint at its end counts.
	first, second, _ := strings.Cut(string(good), "\n")
	os.WriteFile(path, []byte(first+"\n"+`{"v":1,"seq":9,"hea`+second), 0o600)
	if file, err := ReadFile(path); err != nil || len(file.Entries) != 2 || !slices.Equal(file.Torn, []int{2}) {
		t.Fatalf("a checkpoint appended onto a torn line: %+v, %v", file, err)
	}
	for _, damaged := range []string{"not json\n", `{"v":1,"seq":"x"}` + "\n", `{"v":2}` + "\n", `{"v":1}{"v":1}` + "\n"} {
		os.WriteFile(path, append([]byte(damaged), good...), 0o600)
		if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Fatalf("damaged line %q: %v", damaged, err)
		}
	}
}
