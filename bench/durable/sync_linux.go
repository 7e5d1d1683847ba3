package main

import (
	"os"
	"syscall"
)

// syncData is fdatasync, the call SQLite and PostgreSQL make on Linux to sync their write-ahead logs.
func syncData(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
