package store

import (
	"context"
	"errors"
	"time"
)

// ErrWriteWait means a write waited the engine's busy timeout for a lock held by a transaction of
// this process: SQLite's write lock, which this process's writers take in Go (writeLock), or on
// PostgreSQL the audit chain's turn. Either a transaction held it that long, or, the likely cause,
// a transaction's body called back into the store: RecordAudit, a write on the pool or another
// transaction started inside a transaction's body (directly, through an interface or a method
// value, or on a goroutine the body waits for) waits for the lock its own transaction holds. A
// transaction records its audit event in itself, with auditChain.Append, never through the store.
// It is answered as unavailable (try again), as another process's lock past the busy timeout is.
var ErrWriteWait = errors.New("store: waited the busy timeout for a lock a transaction of this process holds (a transaction's body calling back into the store, such as RecordAudit inside it, waits for itself)")

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
