//go:build unix && !linux

package main

import (
	"os"
	"syscall"
)

// syncData is fsync where the system has no fdatasync, as SQLite makes it there (on macOS,
// os.File.Sync asks for F_FULLFSYNC, a flush of the drive's cache that neither database makes by
// default).
func syncData(f *os.File) error { return syscall.Fsync(int(f.Fd())) }
