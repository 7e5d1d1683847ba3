//go:build unix

package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"backoffice/internal/dataset"
	"backoffice/internal/testdb"
)

// A named pipe, a process substitution (/dev/fd/N) and standard input are imported as a file is,
// and an error in one names its line and column in it. A named pipe and /dev/fd are Unix's.
func TestImportReadsAnyStream(t *testing.T) {
	e := newTestEnv(t)
	ds := testdb.SAMBase()
	ds.SAMActionLogs = testdb.SAMLogs(ds.Leads[0].ID, 0, 3000)
	var file bytes.Buffer
	if err := dataset.Write(&file, ds); err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(file.Bytes(), []byte(`"samId": 2500`), []byte(`"samId": 2500.5`), 1)

	fifo := filepath.Join(e.dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	viaFIFO := func(data []byte) (string, error) {
		go func() {
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err == nil {
				w.Write(data)
				w.Close()
			}
		}()
		out, _, err := e.run("import", "--upsert", fifo)
		return out, err
	}
	viaFD := func(data []byte) (string, error) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		go func() {
			w.Write(data)
			w.Close()
		}()
		out, _, err := e.run("import", "--upsert", "/dev/fd/"+strconv.Itoa(int(r.Fd())))
		return out, err
	}
	viaStdin := func(data []byte) (string, error) {
		var out, errOut bytes.Buffer
		err := Run(context.Background(), Env{Args: []string{"import", "--upsert", "-"}, Getenv: func(k string) string { return e.vars[k] },
			Stdin: bytes.NewReader(data), Stdout: &out, Stderr: &errOut})
		return out.String(), err
	}
	for name, via := range map[string]func([]byte) (string, error){"named pipe": viaFIFO, "process substitution": viaFD, "standard input": viaStdin} {
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
