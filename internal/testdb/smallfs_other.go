//go:build !linux

package testdb

import "testing"

// SmallFilesystem is a tmpfs of size bytes on Linux; elsewhere the test is skipped, saying why.
func SmallFilesystem(t *testing.T, size int64) string {
	t.Helper()
	t.Skipf("a full filesystem of %d bytes is made with a Linux tmpfs mount; run this test on Linux (CI does)", size)
	return ""
}
