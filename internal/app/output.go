package app

import (
	"os"
)

// outputFile is a command's output file while it is written: nothing names it until finish
// publishes it whole under its name, and abort leaves nothing behind.
type outputFile struct {
	*os.File
	// unnamed: the file has no name while it is written (createOutput on Linux), and is
	// published by linking it (publishUnnamed); otherwise it has a temporary name beside its
	// own, and is renamed.
	unnamed bool
}

// namedOutput writes under a temporary name in dir, renamed into place: what a process killed
// outright (kill -9) while writing leaves behind there, on a system without unnamed files.
func namedOutput(dir string) (*outputFile, error) {
	f, err := os.CreateTemp(dir, ".export-*") // mode 0600
	if err != nil {
		return nil, err
	}
	return &outputFile{File: f}, nil
}

// finish syncs the file, then publishes it under name, replacing a file there.
func (o *outputFile) finish(name string) error {
	if o.unnamed {
		defer o.Close()
		if err := o.Sync(); err != nil {
			return err
		}
		return o.publishUnnamed(name)
	}
	err := o.Sync()
	if cerr := o.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(o.Name(), name)
	}
	if err != nil {
		os.Remove(o.Name())
	}
	return err
}

// abort drops the file, leaving nothing behind.
func (o *outputFile) abort() {
	o.Close()
	if !o.unnamed {
		os.Remove(o.Name())
	}
}
