//go:build unix && !linux

package main

import (
	"os"
	"syscall"
)

// syncData is fsync where the system has no fdatasync: the call the databases make there (on
// macOS, os.File.Sync asks for F_FULLFSYNC, a flush of the drive's cache that neither makes by
// default).
func syncData(f *os.File) error { return syscall.Fsync(int(f.Fd())) }
