package checkpoint

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
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
// file, at seqs after the file's last.
func chain(t *testing.T, path string, signers ...string) {
	t.Helper()
	for _, id := range signers {
		if _, appended, err := Append(path, allKeys(), nil, atSeq(lastSeq(t, path)+1, id)); err != nil || !appended {
			t.Fatalf("append: %v (appended %v)", err, appended)
		}
	}
}

// atSeq signs a checkpoint at seq under key id.
func atSeq(seq int64, id string) func(prev *Checkpoint) (Checkpoint, error) {
	return func(prev *Checkpoint) (Checkpoint, error) {
		return signed(Checkpoint{Seq: seq, Digest: strings.Repeat("ab", 32), Prev: idOf(prev), At: "2026-11-25T12:00:00Z", KeyID: id}), nil
	}
}

// idOf is the id of prev, "" for none.
func idOf(prev *Checkpoint) string {
	if prev == nil {
		return ""
	}
	return prev.ID()
}

func lastSeq(t *testing.T, path string) int64 {
	t.Helper()
	file, err := ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || err == nil && len(file.Entries) == 0 {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return file.Entries[len(file.Entries)-1].Seq
}

func pub(id string) ed25519.PublicKey { return key(id[1] - '0').Public().(ed25519.PublicKey) }

// allKeys are k1 to k8, the keys a ring of these tests holds.
func allKeys() map[string]ed25519.PublicKey {
	keys := map[string]ed25519.PublicKey{}
	for i := 1; i <= 8; i++ {
		id := fmt.Sprintf("k%d", i)
		keys[id] = pub(id)
	}
	return keys
}

// A new checkpoint names, and so vouches for, the one before it: Append refuses to name one it
// cannot check (a line forged under a key id nobody holds, or one whose signature does not hold),
// and writes nothing.
func TestAppendRefusesAPredecessorItCannotCheck(t *testing.T) {
	for name, forge := range map[string]func(good []byte) []byte{
		"an invented key id": func(good []byte) []byte {
			line, _ := json.Marshal(Checkpoint{V: 1, Seq: 3, Digest: strings.Repeat("cd", 32), Prev: "x", At: "2026-11-25T12:00:00Z", KeyID: "kX", Sig: "AAAA"})
			return append(good, append(line, '\n')...)
		},
		"a signature that does not hold": func(good []byte) []byte {
			return []byte(strings.Replace(string(good), `"seq":2`, `"seq":7`, 1))
		},
		"a key the ring no longer holds": func(good []byte) []byte {
			var c Checkpoint
			json.Unmarshal(bytes.TrimSpace(good[bytes.LastIndexByte(good[:len(good)-1], '\n')+1:]), &c)
			line, _ := json.Marshal(signed(Checkpoint{Seq: 3, Digest: c.Digest, Prev: c.ID(), At: c.At, KeyID: "k9"}))
			return append(good, append(line, '\n')...)
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.jsonl")
			chain(t, path, "k1", "k1")
			good, _ := os.ReadFile(path)
			forged := forge(good)
			os.WriteFile(path, forged, 0o600)
			_, appended, err := Append(path, allKeys(), nil, atSeq(10, "k1"))
			if !errors.Is(err, ErrUnverifiable) || appended {
				t.Fatalf("appended %v after %s: %v", appended, name, err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, forged) {
				t.Fatalf("the file changed:\n%s", after)
			}
		})
	}
}

// Two processes appending to one file: the one behind (its walk at a lower seq than the file's
// last checkpoint) writes nothing and is given the checkpoint that already covers it.
func TestAppendBehindTheFileWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	chain(t, path, "k1", "k1", "k1")
	before, _ := os.ReadFile(path)
	for _, seq := range []int64{2, 3} {
		c, appended, err := Append(path, allKeys(), nil, atSeq(seq, "k1"))
		if err != nil || appended || c.Seq != 3 {
			t.Fatalf("seq %d behind seq 3: got seq %d, appended %v, %v", seq, c.Seq, appended, err)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Fatal("the file changed")
	}
}

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
	if err != nil || len(vouched) != 3 || len(unvouched) != 1 || unvouched[0].KeyID != "k3" {
		t.Fatalf("vouched %d, unvouched %+v, %v; want 3 and the one under k3", len(vouched), unvouched, err)
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

// A checkpoint is appended only when the file at its path holds it afterwards: a file renamed
// over the one being appended to (a swapped file) leaves the new checkpoint in the old file,
// where no auditor reads it, and Append says so instead of reporting it appended. Each way the
// file can change under the append is tried.
func TestAppendReadsTheCheckpointBack(t *testing.T) {
	for name, swap := range map[string]func(t *testing.T, path string, good []byte){
		"renamed over by a copy": func(t *testing.T, path string, good []byte) {
			tmp := path + ".swap"
			if err := os.WriteFile(tmp, good, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		},
		"removed": func(t *testing.T, path string, _ []byte) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.jsonl")
			chain(t, path, "k1", "k1")
			good, _ := os.ReadFile(path)
			sign := atSeq(3, "k1")
			_, appended, err := Append(path, allKeys(), nil, func(prev *Checkpoint) (Checkpoint, error) {
				swap(t, path, good)
				return sign(prev)
			})
			if appended || err == nil {
				t.Fatalf("appended %v into a swapped file: %v", appended, err)
			}
			if name == "renamed over by a copy" && !errors.Is(err, ErrNotReadBack) {
				t.Fatalf("the error does not say the checkpoint did not read back: %v", err)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "c.jsonl")
	chain(t, path, "k1", "k1", "k1")
	if lastSeq(t, path) != 3 {
		t.Fatal("appends to an untouched file do not read back")
	}
}

// lastOf is the last checkpoint of the file at path, as the appender last wrote or read it.
func lastOf(t *testing.T, path string) *Checkpoint {
	t.Helper()
	tail, err := ReadLast(path)
	if err != nil || tail.Last == nil {
		t.Fatalf("no last checkpoint in %s: %v", path, err)
	}
	return &tail.Last.Checkpoint
}

// otherChain is a file of n checkpoints that each name the one before, signed under k1 like
// chain's but stating other digests: another history under the same key.
func otherChain(n int64) []byte {
	var b []byte
	prev := ""
	for seq := int64(1); seq <= n; seq++ {
		c := signed(Checkpoint{Seq: seq, Digest: strings.Repeat("ef", 32), Prev: prev, At: "2026-11-25T12:00:00Z", KeyID: "k1"})
		line, _ := json.Marshal(c)
		b = append(append(b, line...), '\n')
		prev = c.ID()
	}
	return b
}

// The file an appender appends to must still hold the checkpoint it last wrote or read there,
// followed only by checkpoints that each name the one before it: a file moved over, truncated,
// rewritten or removed since is refused (ErrReplaced), names what it holds instead, and is left
// as it is (a removed one is not made anew). Each way of replacing it is tried.
func TestAppendRefusesAReplacedFile(t *testing.T) {
	for name, replace := range map[string]func(t *testing.T, path string, good []byte){
		"moved over by an older copy": func(t *testing.T, path string, good []byte) {
			older := filepath.Join(t.TempDir(), "older")
			chain(t, older, "k1")
			if err := os.Rename(older, path); err != nil {
				t.Fatal(err)
			}
		},
		"truncated and rewritten with another history": func(t *testing.T, path string, _ []byte) {
			if err := os.WriteFile(path, otherChain(3), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"truncated": func(t *testing.T, path string, _ []byte) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		},
		"rewritten after it": func(t *testing.T, path string, good []byte) {
			line, _ := json.Marshal(signed(Checkpoint{Seq: 3, Digest: strings.Repeat("ab", 32), Prev: strings.Repeat("0", 64), At: "2026-11-25T12:00:00Z", KeyID: "k1"}))
			if err := os.WriteFile(path, append(good, append(line, '\n')...), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"removed": func(t *testing.T, path string, _ []byte) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.jsonl")
			chain(t, path, "k1", "k1")
			after := lastOf(t, path)
			good, _ := os.ReadFile(path)
			replace(t, path, good)
			before, beforeErr := os.ReadFile(path)
			_, appended, err := Append(path, allKeys(), after, atSeq(10, "k1"))
			if !errors.Is(err, ErrReplaced) || appended {
				t.Fatalf("appended %v to a file %s: %v; want it refused as replaced", appended, name, err)
			}
			if !strings.Contains(err.Error(), "seq 2") || !strings.Contains(err.Error(), "put") {
				t.Errorf("the error does not name the checkpoint the file lost and what to do: %v", err)
			}
			now, nowErr := os.ReadFile(path)
			if !bytes.Equal(now, before) || (beforeErr == nil) != (nowErr == nil) {
				t.Errorf("the replaced file changed:\n%s", now)
			}
		})
	}
}

// What other processes append after the checkpoint an appender last wrote or read (a restart
// that starts the new serve before the old one stops), each naming the one before it, is the
// same file carried on, however much of it there is; so is a copy of the same bytes put in its
// place.
func TestAppendAfterOtherProcessesAppended(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	chain(t, path, "k1")
	after := lastOf(t, path)
	for range 2 * tailChunk / 200 { // more than the first read of the end holds
		chain(t, path, "k1")
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() < 2*tailChunk {
		t.Fatalf("the others' appends do not outgrow the first read of the end: %v", err)
	}
	last, theirs := lastSeq(t, path), lastOf(t, path)
	c, appended, err := Append(path, allKeys(), after, atSeq(last+1, "k1"))
	if err != nil || !appended || c.Prev != theirs.ID() {
		t.Fatalf("after other processes appended: appended %v, %v", appended, err)
	}
	after = &c
	good, _ := os.ReadFile(path)
	copied := filepath.Join(t.TempDir(), "copy")
	if err := os.WriteFile(copied, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(copied, path); err != nil {
		t.Fatal(err)
	}
	if _, appended, err := Append(path, allKeys(), after, atSeq(last+2, "k1")); err != nil || !appended {
		t.Fatalf("after a copy of the same bytes was put in its place: appended %v, %v", appended, err)
	}
}

// A file's first checkpoint names none before it: one that does (the file cut at its start, or
// only its end kept) still holds together, and StartsMidway says where it starts.
func TestStartsMidway(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	chain(t, path, "k1", "k1", "k1")
	file, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := StartsMidway(file.Entries); n != "" {
		t.Fatalf("the whole file: %q", n)
	}
	if _, _, err := Vouched(file.Entries[1:], allKeys()); err != nil {
		t.Fatalf("the file without its first checkpoint: %v", err)
	}
	if n := StartsMidway(file.Entries[1:]); !strings.Contains(n, "the file starts mid-way") {
		t.Fatalf("the file without its first checkpoint: %q; want it said to start mid-way", n)
	}
}
