//go:build !linux

package sqlite

import "errors"

// room is checked on Linux only; elsewhere the write probe's commit is the check.
func (f *dbFile) room() error { return nil }

// errNoRoom marks a filesystem that may not take the next commit.
var errNoRoom = errors.New("no room to write")
