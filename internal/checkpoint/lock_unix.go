//go:build unix

package checkpoint

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on f (flock: every process that appends takes it), waiting
// while another process holds it; unlock releases it.
func lockFile(f *os.File) (unlock func(), err error) {
	fd := int(f.Fd())
	for {
		err = syscall.Flock(fd, syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return func() { syscall.Flock(fd, syscall.LOCK_UN) }, nil
}
