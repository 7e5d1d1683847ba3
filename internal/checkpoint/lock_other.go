//go:build !unix

package checkpoint

import (
	"errors"
	"os"
)

// lockFile refuses where there is no flock: two processes could append unseen.
func lockFile(*os.File) (func(), error) {
	return nil, errors.New("locking a checkpoints file needs a Unix system")
}
