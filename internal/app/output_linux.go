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
	finish := func(name string) error {
		defer f.Close()
		if err := f.Sync(); err != nil {
			return err
		}
		err := linkOutput(f, name)
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
		// A file is there: link beside it, then rename over it, as namedOutput does.
		tmp := filepath.Join(filepath.Dir(name), ".export-"+rand.Text())
		if err := linkOutput(f, tmp); err != nil {
			return err
		}
		if err := os.Rename(tmp, name); err != nil {
			os.Remove(tmp)
			return err
		}
		return nil
	}
	return &outputFile{File: f, finish: finish, abort: func() { f.Close() }}, nil
}

// linkOutput gives f, a file with no name, the name name (open(2)'s way, through /proc).
func linkOutput(f *os.File, name string) error {
	if err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.AT_FDCWD, name, unix.AT_SYMLINK_FOLLOW); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
