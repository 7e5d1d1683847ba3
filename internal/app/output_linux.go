package app

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// createOutput makes the output in dir as a file with no name (O_TMPFILE), linked under its name
// only once written and synced: a process killed outright while it writes (an export with
// plaintext SSNs, say) leaves nothing on disk, as the system frees an unnamed file with its last
// descriptor. Where the file system or /proc cannot (an O_TMPFILE refused, no /proc), it is
// written under a temporary name (namedOutput).
func createOutput(dir string) (*outputFile, error) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		return namedOutput(dir)
	}
	f, err := os.OpenFile(dir, unix.O_TMPFILE|os.O_WRONLY, 0o600)
	if err != nil {
		return namedOutput(dir)
	}
	return &outputFile{File: f, unnamed: true}, nil
}

// publishUnnamed links the unnamed file under name; where a file is there, beside it under a
// temporary name, then renamed over it, as namedOutput's is.
func (o *outputFile) publishUnnamed(name string) error {
	err := o.link(name)
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
	tmp := filepath.Join(filepath.Dir(name), ".export-"+rand.Text())
	if err := o.link(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// link gives the unnamed file the name name (open(2)'s way, through /proc).
func (o *outputFile) link(name string) error {
	if err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(o.Fd())), unix.AT_FDCWD, name, unix.AT_SYMLINK_FOLLOW); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
