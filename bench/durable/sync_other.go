//go:build !linux

package main

import "os"

// syncData is fsync where the system has no fdatasync.
func syncData(f *os.File) error { return f.Sync() }
