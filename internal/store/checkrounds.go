package store

import (
	"context"
	"errors"
	"runtime"
	"sync"
)

// checkRounds shares one read of the version among the requests that ask for it before that read
// begins. Each request's check must begin after the request did (so that it sees every commit
// made before the request arrived); a read that has not begun yet is such a check for everyone
// waiting on it. So the first to ask opens a round and lets the goroutines ready to run go first
// (one runtime.Gosched: under load those are requests already read off their connections, which
// reach their own check and join the round); then it closes the round to newcomers, reads once,
// and answers everyone in it. A lone request yields to nobody and reads at once. Under load on
// one core this turns a read per request into a read per round (see docs/performance.md).
type checkRounds struct {
	read versioner
	mu   sync.Mutex
	open *checkRound // the round not yet begun, which a caller may join; nil when none is
}

type checkRound struct {
	done    chan struct{}
	version int64
	err     error
}

func newCheckRounds(read versioner) *checkRounds { return &checkRounds{read: read} }

// Version joins the open round, or opens one and reads for it.
func (c *checkRounds) Version(ctx context.Context) (int64, error) {
	c.mu.Lock()
	if r := c.open; r != nil {
		c.mu.Unlock()
		v, err := r.wait(ctx)
		if err != nil && ctx.Err() == nil && isContextError(err) {
			return c.read.Version(ctx) // the opener gave up, not this caller: read for itself
		}
		return v, err
	}
	r := &checkRound{done: make(chan struct{})}
	c.open = r
	c.mu.Unlock()

	runtime.Gosched()

	c.mu.Lock()
	c.open = nil // from here on a caller opens the next round: this read may begin before it asked
	c.mu.Unlock()
	r.version, r.err = c.read.Version(ctx)
	close(r.done)
	return r.version, r.err
}

func (r *checkRound) wait(ctx context.Context) (int64, error) {
	select {
	case <-r.done:
		return r.version, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
