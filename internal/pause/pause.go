// Package pause is the service's one wait that gives way to its context: a retry's backoff, a
// rest between pages of work, a background task's next attempt. The standard library has none
// (time.Sleep cannot be interrupted).
package pause

import (
	"context"
	"time"
)

// For waits d, or less when ctx ends first, and then returns ctx's error.
func For(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
