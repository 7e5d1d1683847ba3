package app

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"backoffice/internal/dataset"
	"backoffice/internal/testdb"
)

// childImportVar, set, makes TestImportChildProcess run `import` with these arguments (separated
// by spaces) as its own process, reading its standard input, for a test to kill or measure.
const childImportVar = "BACKOFFICE_TEST_IMPORT_CHILD"

func TestImportChildProcess(t *testing.T) {
	args := os.Getenv(childImportVar)
	if args == "" {
		t.Skip("run by the tests of an import in a process of its own")
	}
	env := Env{Args: strings.Fields(args), Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	code := Report(os.Stderr, Run(context.Background(), env))
	// The peak of this process's own memory (the kernel's count for its address space: the
	// process's maximum RSS would also count its parent's, whose memory it started in).
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			fmt.Fprintln(os.Stderr, "peak resident:", strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")))
		}
	}
	os.Exit(code)
}

// importChild is `backoffice import args…` in a process of its own, with its own folder for
// temporary files and its standard input a pipe the test writes.
func importChild(t *testing.T, vars map[string]string, tmp string, args ...string) (*exec.Cmd, io.WriteCloser, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestImportChildProcess$")
	cmd.Env = append(os.Environ(), childImportVar+"="+strings.Join(args, " "), "TMPDIR="+tmp,
		"BACKOFFICE_MASTER_KEYS=", "BACKOFFICE_MASTER_KEYS_FILE=", "BACKOFFICE_MASTER_KEY_FILE=")
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Read while the child writes (a test waits for a line): exec copies into it from a goroutine.
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, in, out
}

// spoolOf is the child's spool: the file it holds open that no name leads to ("" while none).
func spoolOf(pid int) string {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		path := fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())
		if target, err := os.Readlink(path); err == nil && strings.Contains(target, "backoffice-import-") {
			return path
		}
	}
	return ""
}

// secretDataset is a dataset of SSNs and an API key that a test can look for in what an import
// leaves, and logs enough for the import to take a while.
func secretDataset(logs int) (*dataset.Dataset, []string) {
	ds := testDataset(50)
	ds.SAMActionLogs = testdb.SAMLogs(testLead, 0, logs)
	secrets := []string{testStaffKey}
	for i := range 50 {
		secrets = append(secrets, testSSN(i))
	}
	return ds, secrets
}

// `import -` killed with -9, once while it reads its standard input and once while it writes the
// database, leaves nothing readable behind: its folder for temporary files is empty (the spool
// had no name from the start), the database is as it was, and even while it ran, its spool held
// none of the file's secrets in the clear.
func TestImportKilledLeavesNothingBehind(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			e := newTestEnv(t)
			e.vars["BACKOFFICE_DATABASE_URL"] = testdb.URL(t, engine)
			if _, _, err := e.run("import", e.writeDataset("before.json", testdb.SAMBase())); err != nil {
				t.Fatal(err)
			}
			before := e.export()
			// Large enough that the import is still writing when it is killed, 300 ms after its
			// spool is whole: with fewer logs a fast, quiet machine committed first.
			ds, secrets := secretDataset(600_000)
			var file bytes.Buffer
			if err := dataset.Write(&file, ds); err != nil {
				t.Fatal(err)
			}
			for _, when := range []string{"reading", "writing"} {
				tmp := t.TempDir()
				cmd, in, out := importChild(t, e.vars, tmp, "import", "-")
				deadline := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
				data := file.Bytes()
				half := len(data) / 2
				if _, err := in.Write(data[:half]); err != nil {
					t.Fatal(err)
				}
				spool := waitFor(t, func() string { return spoolOf(cmd.Process.Pid) })
				if when == "writing" {
					if _, err := in.Write(data[half:]); err != nil {
						t.Fatal(err)
					}
					in.Close()
					// All of it in the spool: the first reading is done, the import's transaction next.
					waitFor(t, func() string {
						if fi, err := os.Stat(spool); err == nil && fi.Size() == int64(len(data)) {
							return "done"
						}
						return ""
					})
					time.Sleep(300 * time.Millisecond)
				}
				copied, err := os.ReadFile(spool)
				if err != nil || len(copied) == 0 {
					t.Fatalf("%s: the spool could not be read: %v", when, err)
				}
				for _, s := range secrets {
					if bytes.Contains(copied, []byte(s)) {
						t.Fatalf("%s: the spool holds %q in the clear", when, s)
					}
				}
				if err := cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				cmd.Wait()
				deadline.Stop()
				in.Close()
				if strings.Contains(out.String(), "imported") {
					t.Fatalf("%s: the import ended before it was killed: %s", when, out)
				}
				if left, _ := os.ReadDir(tmp); len(left) != 0 {
					t.Errorf("%s: after kill -9, %d files in TMPDIR: %v", when, len(left), left)
				}
				if diff := cmp.Diff(before, e.export()); diff != "" {
					t.Errorf("%s: after kill -9 the database changed:\n%s", when, diff)
				}
			}
		})
	}
}

// waitFor polls f until it gives something, failing the test after a minute.
func waitFor(t *testing.T, f func() string) string {
	t.Helper()
	for start := time.Now(); time.Since(start) < time.Minute; time.Sleep(5 * time.Millisecond) {
		if v := f(); v != "" {
			return v
		}
	}
	t.Fatal("gave up waiting")
	return ""
}

// Standard input is imported as a file is, and an error in it names its line and column in it
// (a named pipe and /dev/fd too, on Unix: importstream_unix_test.go).
func TestImportReadsStandardInput(t *testing.T) {
	e := newTestEnv(t)
	viaStdin := func(data []byte) (string, error) {
		var out, errOut bytes.Buffer
		err := Run(context.Background(), Env{Args: []string{"import", "--upsert", "-"}, Getenv: func(k string) string { return e.vars[k] },
			Stdin: bytes.NewReader(data), Stdout: &out, Stderr: &errOut})
		return out.String(), err
	}
	importsAnyStream(t, e, map[string]func([]byte) (string, error){"standard input": viaStdin})
}

// importsAnyStream imports a dataset of 3,000 SAM logs, and the same with one log wrong, through
// each way of reading it: the first is imported whole, the second refused naming the log's
// line, nothing of it imported.
func importsAnyStream(t *testing.T, e *testEnv, vias map[string]func([]byte) (string, error)) {
	t.Helper()
	ds := testdb.SAMBase()
	ds.SAMActionLogs = testdb.SAMLogs(ds.Leads[0].ID, 0, 3000)
	var file bytes.Buffer
	if err := dataset.Write(&file, ds); err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(file.Bytes(), []byte(`"samId": 2500`), []byte(`"samId": 2500.5`), 1)
	for name, via := range vias {
		out, err := via(file.Bytes())
		if err != nil || !strings.Contains(out, "imported 3003 records from ") {
			t.Errorf("%s: %q, %v", name, out, err)
		}
		_, err = via(bad)
		want := "samActionLogs[2500].samId: expected a whole number from -9223372036854775808 to 9223372036854775807, got 2500.5 (line "
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasSuffix(err.Error(), "(nothing was imported)") {
			t.Errorf("%s, a bad log: %v", name, err)
		}
	}
	if got := e.export(); len(got.SAMActionLogs) != 3000 {
		t.Errorf("%d logs stored, want 3000", len(got.SAMActionLogs))
	}
}

// A stream of 400 MB that is wrong from its first bytes, or whose first record never ends, is
// refused in the memory of a record, not of the stream: the import's peak resident memory (its
// process's, from the system) stays far below the stream's size.
func TestImportRefusesABadStreamInTheMemoryOfARecord(t *testing.T) {
	const size = 400 << 20
	e := newTestEnv(t)
	for _, c := range []struct{ name, head, fill, want string }{
		{"not an object", "[", "1,", "not a JSON object (line 1, column 1)"},
		{"a record that never ends", `{"partners": [{"id": "` + string(testPartner) + `", "name": "`, "x", "partners[0].name: longer than 255 characters (line 1, column 70)"},
		{"a key that never ends", `{"`, "x", "a value larger than 1 MiB (line 1, column 2)"},
	} {
		cmd, in, out := importChild(t, e.vars, t.TempDir(), "import", "-")
		go func() {
			defer in.Close()
			chunk := bytes.Repeat([]byte(c.fill), (1<<20)/len(c.fill))
			if _, err := in.Write([]byte(c.head)); err != nil {
				return
			}
			for sent := 0; sent < size; sent += len(chunk) {
				if _, err := in.Write(chunk); err != nil {
					return // the import has stopped reading
				}
			}
		}()
		cmd.Wait()
		if !strings.Contains(out.String(), c.want) || !strings.Contains(out.String(), "(nothing was imported)") {
			t.Errorf("%s: %s", c.name, out)
		}
		var peak int64
		if _, err := fmt.Sscanf(out.String()[strings.Index(out.String(), "peak resident: "):], "peak resident: %d kB", &peak); err != nil {
			t.Fatalf("%s: no peak: %v\n%s", c.name, err, out)
		}
		t.Logf("%s: peak resident memory %d MiB", c.name, peak>>10)
		if peak<<10 > 64<<20 && !raceDetector {
			t.Errorf("%s: peak resident memory %d MiB for a %d MiB stream", c.name, peak>>10, size>>20)
		}
	}
}

// Every problem deep in a file of many lines names its own line and column (a missing quote in
// samActionLogs[500] used to be reported at the end of the file): syntax, a number out of range,
// an impossible date, a value past its limit, a document of 10 MiB and 2 bytes, a reference, a
// duplicate.
func TestImportNamesTheLineOfAFaultDeepInTheFile(t *testing.T) {
	e := newTestEnv(t)
	base := testdb.SAMBase()
	lead := base.Leads[0].ID
	logLine := func(i int) string {
		return fmt.Sprintf(`  {"id": "%s", "entityId": "%s", "action": "a", "actionDate": "2026-01-01T00:00:00Z", "samId": %d}`, testdb.SAMID(1_000_000+i), lead, i)
	}
	// Lines 1 to 4 open the file; log i is on line 5 + i; the file ends at line 707.
	file := func(edit func(i int, line string) string) string {
		lines := []string{"{",
			`"partners": [{"id": "` + string(base.Partners[0].ID) + `", "name": "P"}],`,
			`"leads": [{"id": "` + string(lead) + `", "partnerId": "` + string(base.Partners[0].ID) + `", "businessName": "L"}],`,
			`"samActionLogs": [`}
		for i := range 700 {
			line := logLine(i)
			if i < 699 {
				line += ","
			}
			lines = append(lines, edit(i, line))
		}
		lines = append(lines, "],", `"merchants": []`, "}")
		return strings.Join(lines, "\n") + "\n"
	}
	at500 := func(old, new string) func(int, string) string {
		return func(i int, line string) string {
			if i == 500 {
				return strings.Replace(line, old, new, 1)
			}
			return line
		}
	}
	doc := `{"merchants": [{"id": "` + string(testdb.SAMID(5)) + `", "partnerId": "` + string(testPartner) + `", "name": "M"}],
"merchantDocuments": [
  {"id": "` + string(testdb.SAMID(6)) + `", "merchantId": "` + string(testdb.SAMID(5)) + `", "fileName": "f", "contentType": "a/b",
   "contentBase64": "` + base64.StdEncoding.EncodeToString(make([]byte, 10<<20+2)) + `"}]}`
	for _, c := range []struct{ name, file, want string }{
		{"missing quote", file(at500(`"action": "a"`, `"action": a"`)),
			"samActionLogs[500].action: malformed JSON: invalid character 'a' at start of value (line 505, column "},
		{"number out of range", file(at500(`"samId": 500`, `"samId": 1e400`)),
			"samActionLogs[500].samId: expected a whole number from -9223372036854775808 to 9223372036854775807, got 1e400 (line 505, column 164)"},
		{"impossible date", file(at500("2026-01-01", "2026-02-30")),
			`samActionLogs[500].actionDate: not an RFC 3339 date-time (parsing time "2026-02-30T00:00:00Z": day out of range) (line 505, column 131)`},
		{"past its limit", file(at500(`"action": "a"`, `"action": "`+strings.Repeat("é", 256)+`"`)),
			"samActionLogs[500].action: longer than 255 characters (256) (line 505, column 112)"},
		{"a reference", file(at500(string(lead), string(testdb.SAMID(99)))),
			"samActionLogs[500].entityId: no lead, merchant, deployment order, line item or equipment with this id (line 505, column 62)"},
		{"a duplicate", file(at500(string(testdb.SAMID(1_000_500)), string(testdb.SAMID(1_000_010)))),
			fmt.Sprintf("samActionLogs[500].id: duplicate id %s (line 505, column 10)", testdb.SAMID(1_000_010))},
		{"a document of 10 MiB and 2 bytes", doc,
			"merchantDocuments[0].contentBase64: a document larger than 10 MiB (10485762 bytes once decoded) (line 4, column 21)"},
	} {
		path := filepath.Join(e.dir, "bad.json")
		if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, err := e.run("import", path)
		if want := "import " + path + ": " + c.want; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v\nwant %s…", c.name, err, want)
		}
	}
	// The same file without a fault imports.
	path := filepath.Join(e.dir, "good.json")
	if err := os.WriteFile(path, []byte(file(func(_ int, line string) string { return line })), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, err := e.run("import", path); err != nil || !strings.HasPrefix(out, "imported 702 records") {
		t.Fatalf("the good file: %q, %v", out, err)
	}
}
