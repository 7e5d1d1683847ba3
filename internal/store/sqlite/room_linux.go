package sqlite

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// minRoom is the free space the database's filesystem must have for a write to be sure of its
// room: a commit appends a WAL frame (a page and a 24-byte header) per page it changes, and the
// largest a request makes (an audit group of up to 128 events with their index entries, a push's
// records) changes a few dozen pages; the rest is for the WAL to grow until its next checkpoint.
const minRoom = 1 << 20

// room fails when the filesystem holding the database file, and its WAL beside it, is mounted
// read-only or has less than minRoom free for a process without the root's reserve (statfs's
// f_bavail: the server is not meant to run as root, and where it does this fails early, never
// late).
func (f *dbFile) room() error {
	dir := filepath.Dir(f.path)
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("sqlite: %s: %w: %w", dir, errNoRoom, err)
	}
	if st.Flags&unix.ST_RDONLY != 0 {
		return fmt.Errorf("sqlite: %s: %w: the filesystem is read-only", dir, errNoRoom)
	}
	unit := st.Frsize
	if unit <= 0 {
		unit = st.Bsize
	}
	if free := st.Bavail * uint64(unit); free < minRoom {
		return fmt.Errorf("sqlite: %s: %w: %d bytes free, fewer than the %d a commit may need", dir, errNoRoom, free, minRoom)
	}
	return nil
}

// errNoRoom marks a filesystem that may not take the next commit.
var errNoRoom = errors.New("no room to write")
