//go:build linux

package testdb

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// SmallFilesystem mounts a tmpfs of size bytes for this test and returns its path, readable by
// every user (a PostgreSQL server on this host may keep a tablespace there); it is unmounted when
// the test ends. Mounting needs root: the test is skipped otherwise, saying why (CI runs as root).
func SmallFilesystem(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a full filesystem needs a tmpfs, which only root can mount; run as root (CI does)")
	}
	dir, err := os.MkdirTemp("", "backoffice-small-fs-")
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		os.Remove(dir)
		t.Skipf("cannot mount a tmpfs at %s (%v): this sandbox forbids mounts", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
		os.Remove(dir)
	})
	return dir
}
