//go:build !unix

package main

import "os"

// syncData is the system's flush of the file (FlushFileBuffers on Windows).
func syncData(f *os.File) error { return f.Sync() }
