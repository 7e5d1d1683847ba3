package sqltx

import (
	"context"
	"time"
)

// writeLock queues this process's writers on an engine that lets one writer in at a time
// (Engine.SingleWriter): in Go, where SQLite's busy handler would make them poll with sleeps of a
// millisecond and more. Like SQLite's own lock it is waited for at most the engine's busy timeout,
// and then the write fails with ErrWriteWait: a body that reaches the store from inside its
// transaction fails after that wait, instead of waiting for itself forever.
type writeLock struct {
	held chan struct{}
	wait time.Duration
}

func newWriteLock(wait time.Duration) *writeLock {
	return &writeLock{held: make(chan struct{}, 1), wait: wait}
}

// lock takes the lock, waiting at most l.wait (or until ctx ends); a nil lock is always free.
func (l *writeLock) lock(ctx context.Context) error {
	if l == nil {
		return nil
	}
	select {
	case l.held <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(l.wait)
	defer t.Stop()
	select {
	case l.held <- struct{}{}:
		return nil
	case <-t.C:
		return &unavailableError{err: ErrWriteWait}
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *writeLock) unlock() {
	if l != nil {
		<-l.held
	}
}
