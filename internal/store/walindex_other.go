//go:build !unix

package store

import "errors"

// Without mmap the WAL-index header cannot be watched, and the store runs without its read cache.

type walIndex struct{}

func openWALIndex(string) (*walIndex, error) {
	return nil, errors.New("store: wal index: not supported on this system")
}

func (w *walIndex) header() (walHeader, bool) { return walHeader{}, false }

func (w *walIndex) close() error { return nil }
