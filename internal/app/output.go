package app

import (
	"os"
)

// outputFile is a command's output file while it is written: nothing names it until finish
// publishes it whole under its name, and abort leaves nothing behind.
type outputFile struct {
	*os.File
	finish func(name string) error // syncs, then publishes under name (replacing a file there)
	abort  func()
}

// namedOutput writes under a temporary name in dir, renamed into place: what a process killed
// outright (kill -9) while writing leaves behind there, on a system without unnamed files.
func namedOutput(dir string) (*outputFile, error) {
	f, err := os.CreateTemp(dir, ".export-*") // mode 0600
	if err != nil {
		return nil, err
	}
	abort := func() {
		f.Close()
		os.Remove(f.Name())
	}
	finish := func(name string) error {
		err := f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.Name(), name)
		}
		if err != nil {
			os.Remove(f.Name())
		}
		return err
	}
	return &outputFile{File: f, finish: finish, abort: abort}, nil
}
