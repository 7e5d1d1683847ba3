//go:build unix

package app

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// A named pipe and a process substitution (/dev/fd/N), Unix's, are imported as a file is, and an
// error in one names its line and column in it (standard input: TestImportReadsStandardInput).
func TestImportReadsAPipe(t *testing.T) {
	e := newTestEnv(t)
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
	importsAnyStream(t, e, map[string]func([]byte) (string, error){"named pipe": viaFIFO, "process substitution": viaFD})
}
