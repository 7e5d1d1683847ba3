//go:build unix

package store

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// walIndex is a read-only view of a SQLite database's WAL-index header, in the "-shm" file that
// every connection to the database, in any process, maps into memory. SQLite rewrites the header
// on every commit (its iChange counter counts them), so comparing two readings of it tells, in
// nanoseconds and without a statement, whether any connection has committed in between. The
// layout is SQLite's file format (https://sqlite.org/walformat.html, "The WAL-Index Header"):
// fixed, because connections of different SQLite versions share it.
type walIndex struct {
	mem []byte
}

// openWALIndex maps the header of path's -shm file. The file must exist: the caller has started
// a read transaction on a connection that it keeps open, which both creates the file and stops
// SQLite from deleting it (the last connection to close deletes it).
func openWALIndex(path string) (*walIndex, error) {
	f, err := os.Open(path + "-shm")
	if err != nil {
		return nil, fmt.Errorf("store: wal index: %w", err)
	}
	defer f.Close() // the mapping outlives the descriptor
	mem, err := syscall.Mmap(int(f.Fd()), 0, 2*walHeaderSize, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("store: wal index: map %s-shm: %w", path, err)
	}
	return &walIndex{mem: mem}, nil
}

// header reads the header; ok is false while a commit is writing it, or before any connection
// has initialised it: the caller must then act as if the database had changed.
func (w *walIndex) header() (h walHeader, ok bool) {
	var second walHeader
	for i := range h {
		h[i] = atomic.LoadUint32((*uint32)(unsafe.Pointer(&w.mem[4*i])))
	}
	for i := range second {
		second[i] = atomic.LoadUint32((*uint32)(unsafe.Pointer(&w.mem[walHeaderSize+4*i])))
	}
	const isInit = 12 // byte offset of the isInit flag
	initialised := (*[walHeaderSize]byte)(unsafe.Pointer(&h))[isInit] == 1
	return h, h == second && h[0] == walIndexVersion && initialised
}

func (w *walIndex) close() error { return syscall.Munmap(w.mem) }
