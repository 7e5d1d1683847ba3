package main

import (
	"os"
	"syscall"
)

// syncData is fdatasync, the call PostgreSQL makes on Linux to sync its write-ahead log (its
// default wal_sync_method); SQLite's is fsync.
func syncData(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
