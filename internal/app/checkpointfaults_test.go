package app

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"backoffice/internal/checkpoint"
	"backoffice/internal/testdb"
)

// fill writes a file on dir until the filesystem is full, and returns it: removing it gives the
// space back.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 512)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return path
		}
	}
}

// A full disk cuts an append short: the file ends in a torn checkpoint. It stays usable: once
// space returns the next checkpoint starts after it and names the last whole one, verify reports
// the torn one and checks the rest, and serve starts on the file.
func TestCheckpointsSurviveAFullDisk(t *testing.T) {
	dir := testdb.SmallFilesystem(t, 256<<10)
	c, _ := auditCLI(t, "sqlite")
	file := filepath.Join(dir, "checkpoints.jsonl")
	c.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = file
	var logs lockedBuffer
	cp, err := newCheckpointer(file, testdb.OpenAsIs(t, c.vars["BACKOFFICE_DATABASE_URL"]), testdb.Ring(t, "k1"), newLogger(&logs, 0))
	if err != nil {
		t.Fatal(err)
	}
	// Sign until the file's last page has less room than a line: the next append then fills
	// that room and no more.
	const page = 4096
	for i := 0; ; i++ {
		c.mustRun("apikey", "create", "--user", string(testStaff))
		if err := cp.sign(context.Background()); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		if room := page - fi.Size()%page; room > 16 && room < 200 {
			break
		}
		if i == 40 {
			t.Fatalf("the file's last page never had between 16 and 200 bytes of room (%d bytes)", fi.Size())
		}
	}
	signed := len(fileCheckpoints(t, file))
	filler := fill(t, dir)

	c.mustRun("apikey", "create", "--user", string(testStaff))
	if err := cp.sign(context.Background()); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("signing on a full disk: %v, want no space left", err)
	}
	if b := readFile(t, file); strings.HasSuffix(b, "\n") {
		t.Fatalf("the append on a full disk left no torn line: %q", b[max(0, len(b)-80):])
	}
	read, err := checkpoint.ReadFile(file)
	if err != nil || len(read.Entries) != signed || len(read.Torn) != 1 {
		t.Fatalf("the file with its torn last line: %d checkpoints, torn lines %v, %v; want %d and one", len(read.Entries), read.Torn, err, signed)
	}
	torn := read.Torn[0]
	wantVerify(t, c, nil, fmt.Sprintf("line %d is torn", torn))

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	c.mustRun("apikey", "create", "--user", string(testStaff))
	if err := cp.sign(context.Background()); err != nil {
		t.Fatalf("signing once space returned: %v", err)
	}
	read, err = checkpoint.ReadFile(file)
	if err != nil || len(read.Entries) != signed+1 || !slices.Equal(read.Torn, []int{torn}) || read.Entries[signed].Line <= torn {
		t.Fatalf("after space returned: %d checkpoints, torn lines %v, %v; want %d, the new one after the torn one (line %d)", len(read.Entries), read.Torn, err, signed+1, torn)
	}
	out := wantVerify(t, c, nil, fmt.Sprintf("checkpoints: %d matched", signed+1))
	if !strings.Contains(out, fmt.Sprintf("line %d is torn", torn)) {
		t.Errorf("verify does not report the torn line:\n%s", out)
	}

	// serve starts on the file, says what it left out, and signs on it when it stops.
	_, stderr, stop := background(envOf(c.vars), "serve", "--addr", "127.0.0.1:0")
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stderr.String(), `"msg":"serving"`); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start on a file with a torn line:\n%s", stderr)
		}
	}
	c.mustRun("apikey", "create", "--user", string(testStaff))
	if err := stop(); err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr.String(), `"msg":"audit checkpoints: a torn line`) {
		t.Errorf("serve did not log the torn line:\n%s", stderr)
	}
	wantVerify(t, c, nil, fmt.Sprintf("checkpoints: %d matched", signed+2))
}

// childCheckpointsVar, set, makes TestCheckpointsChildProcess sign checkpoints as a process of
// its own, for TestCheckpointsFromTwoProcesses.
const childCheckpointsVar = "BACKOFFICE_TEST_CHECKPOINTS_CHILD"

func TestCheckpointsChildProcess(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(childCheckpointsVar))
	if err != nil {
		t.Skip("run by TestCheckpointsFromTwoProcesses")
	}
	url, file := os.Getenv("BACKOFFICE_DATABASE_URL"), os.Getenv("BACKOFFICE_AUDIT_CHECKPOINTS")
	c := newCLI(t, url, "k1")
	var logs lockedBuffer
	cp, err := newCheckpointer(file, testdb.OpenAsIs(t, url), testdb.Ring(t, "k1"), newLogger(&logs, 0))
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		c.mustRun("apikey", "create", "--user", string(testStaff))
		if err := cp.sign(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// Two processes that append to one checkpoints file at once (a restart that starts the new serve
// before the old one stops) each name the checkpoint truly before theirs, and neither appends
// one behind the file's last (its walk at a lower seq): the file holds together, its seqs rise,
// and verify checks every checkpoint in it.
func TestCheckpointsFromTwoProcesses(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			c, url := auditCLI(t, engine)
			file := filepath.Join(t.TempDir(), "checkpoints.jsonl")
			const each = 15
			var cmds []*exec.Cmd
			for range 2 {
				cmd := exec.Command(os.Args[0], "-test.run=^TestCheckpointsChildProcess$")
				cmd.Env = append(os.Environ(), childCheckpointsVar+"="+strconv.Itoa(each), "BACKOFFICE_DATABASE_URL="+url,
					"BACKOFFICE_AUDIT_CHECKPOINTS="+file)
				cmds = append(cmds, cmd)
			}
			for _, cmd := range cmds {
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
			}
			for _, cmd := range cmds {
				if err := cmd.Wait(); err != nil {
					t.Fatalf("a signer: %v", err)
				}
			}
			read, err := checkpoint.ReadFile(file)
			if err != nil || len(read.Entries) < each || len(read.Torn) != 0 {
				t.Fatalf("%d checkpoints, torn %v, %v; want at least %d", len(read.Entries), read.Torn, err, each)
			}
			for i := 1; i < len(read.Entries); i++ {
				if read.Entries[i].Seq <= read.Entries[i-1].Seq {
					t.Fatalf("line %d covers seq %d, after seq %d", read.Entries[i].Line, read.Entries[i].Seq, read.Entries[i-1].Seq)
				}
			}
			wantVerify(t, c, nil, fmt.Sprintf("checkpoints: %d matched", len(read.Entries)), "--checkpoints", file)
		})
	}
}

// A new checkpoint names the one before it, and so vouches for it; an anchor or a seal covers
// the checkpoints it was checked against. A line appended to the file by someone without the
// master key (under a key id nobody holds) is vouched for by nothing: the running checkpointer
// signs no checkpoint after it, serve does not start on it, and keys rewrap refuses, each naming
// the key; verify checks the rest, says what it left out, and does not call the trail intact
// unless told to limit its claim to what the keys given prove.
func TestNothingVouchesForAForgedCheckpoint(t *testing.T) {
	c, _ := auditCLI(t, "sqlite")
	file := filepath.Join(t.TempDir(), "checkpoints.jsonl")
	c.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = file
	var logs lockedBuffer
	cp, err := newCheckpointer(file, testdb.OpenAsIs(t, c.vars["BACKOFFICE_DATABASE_URL"]), testdb.Ring(t, "k1"), newLogger(&logs, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.sign(context.Background()); err != nil {
		t.Fatal(err)
	}
	last := fileCheckpoints(t, file)[0]
	line, _ := json.Marshal(checkpoint.Checkpoint{V: 1, Seq: last.Seq + 5, Digest: strings.Repeat("00", 32), Prev: last.ID(),
		At: last.At, KeyID: "kX", Sig: base64.StdEncoding.EncodeToString(make([]byte, 64))})
	forged := readFile(t, file) + string(line) + "\n"
	if err := os.WriteFile(file, []byte(forged), 0o600); err != nil {
		t.Fatal(err)
	}

	c.mustRun("apikey", "create", "--user", string(testStaff))
	if err := cp.sign(context.Background()); !errors.Is(err, checkpoint.ErrUnverifiable) || !strings.Contains(err.Error(), "kX") {
		t.Errorf("the running checkpointer after a forged line: %v; want it refused, naming key kX", err)
	}
	if readFile(t, file) != forged {
		t.Errorf("a checkpoint was appended after the forged line")
	}
	if _, err := newCheckpointer(file, testdb.OpenAsIs(t, c.vars["BACKOFFICE_DATABASE_URL"]), testdb.Ring(t, "k1"), newLogger(&logs, 0)); err == nil || !strings.Contains(err.Error(), "key kX, which the ring does not hold") {
		t.Errorf("serve's checkpointer on the forged file: %v; want it refused, naming key kX", err)
	}
	if _, _, err := c.run("keys", "rewrap"); !errors.Is(err, ErrCannotCheck) || !strings.Contains(err.Error(), "nothing was changed") || !strings.Contains(err.Error(), "(kX)") {
		t.Errorf("keys rewrap on the forged file: %v; want it refused (cannot check), naming key kX", err)
	}
	if readFile(t, file) != forged {
		t.Errorf("the file changed")
	}
	wantVerify(t, c, ErrCannotCheck, "CANNOT CHECK: checkpoints signed under a key not given (kX) were not checked")
	wantVerify(t, c, nil, "as far as the keys given prove (--limit-to-keys)", "--limit-to-keys")
}

// A checkpoints file replaced while serve runs (another file moved over it, or it rewritten in
// place with other content: a host attacker, or an operator's mistake) is not appended to: the
// signer logs, at each tick, an error naming the checkpoint the file lost and what to do, with
// the seq it last signed, and the file stays as it was. Once the file it appended to is put
// back, it signs on, and verify checks every checkpoint.
func TestCheckpointerRefusesAReplacedFile(t *testing.T) {
	for name, replace := range map[string]func(t *testing.T, file, older string){
		"moved over": func(t *testing.T, file, older string) {
			if err := os.Rename(older, file); err != nil {
				t.Fatal(err)
			}
		},
		"rewritten in place": func(t *testing.T, file, older string) {
			if err := os.WriteFile(file, []byte(readFile(t, older)), 0o600); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			eachAuditCLI(t, func(t *testing.T, engine string, c *cli, url, file string) {
				var logs lockedBuffer
				cp, err := newCheckpointer(file, testdb.OpenAsIs(t, url), testdb.Ring(t, "k1"), newLogger(&logs, 0))
				if err != nil {
					t.Fatal(err)
				}
				cp.tick(context.Background())
				older, kept := filepath.Join(t.TempDir(), "older"), filepath.Join(t.TempDir(), "kept")
				if err := os.WriteFile(older, []byte(readFile(t, file)), 0o600); err != nil {
					t.Fatal(err)
				}
				c.mustRun("apikey", "create", "--user", string(testStaff))
				cp.tick(context.Background())
				signed := fileCheckpoints(t, file)
				if len(signed) != 2 {
					t.Fatalf("%d checkpoints signed, want 2:\n%s", len(signed), logs.String())
				}
				if err := os.WriteFile(kept, []byte(readFile(t, file)), 0o600); err != nil {
					t.Fatal(err)
				}

				replace(t, file, older)
				replaced := readFile(t, file)
				c.mustRun("apikey", "create", "--user", string(testStaff))
				if err := cp.sign(context.Background()); !errors.Is(err, checkpoint.ErrReplaced) {
					t.Fatalf("signing into the replaced file: %v; want it refused as replaced", err)
				}
				cp.tick(context.Background())
				if readFile(t, file) != replaced {
					t.Fatal("a checkpoint was appended to the replaced file")
				}
				s := logs.String()
				want := fmt.Sprintf(`"level":"ERROR","msg":"audit checkpoint not signed","error":"audit checkpoints: %s: the checkpoints file was replaced or rewritten: it no longer holds the checkpoint of seq %d`, file, signed[1].Seq)
				if !strings.Contains(s, want) || !strings.Contains(s, "put back the file that holds that checkpoint") ||
					!strings.Contains(s, fmt.Sprintf(`"last_checkpoint_seq":%d`, signed[1].Seq)) {
					t.Errorf("the refusal is not logged as an error naming the lost checkpoint, what to do and the seq last signed; want %s in:\n%s", want, s)
				}

				if err := os.Rename(kept, file); err != nil {
					t.Fatal(err)
				}
				if err := cp.sign(context.Background()); err != nil {
					t.Fatalf("once the file was put back: %v", err)
				}
				wantVerify(t, c, nil, "checkpoints: 3 matched", "--checkpoints", file)
			})
		})
	}
}
