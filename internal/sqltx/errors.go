package sqltx

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"

	"backoffice/internal/domain"
)

// unavailableError keeps the driver's error for the log while matching domain.ErrUnavailable.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string        { return "database unavailable: " + e.err.Error() }
func (e *unavailableError) Unwrap() error        { return e.err }
func (e *unavailableError) Is(target error) bool { return target == domain.ErrUnavailable }

// Classify marks the errors of a database that cannot answer now (a lost connection, another
// writer's lock past the busy timeout, a full disk or a read-only database) with
// domain.ErrUnavailable and passes anything else through unchanged, so that not-found and
// constraint errors keep their meaning.
//
// When the connection was lost the pool's idle connections are closed too: they are all dead (a
// server restart or a network cut took them), yet the pool would hand each out once more after
// the database returned, failing one request per connection. Shrinking the idle limit closes them
// now, and restoring it lets new ones be kept. A busy database (another writer's lock) leaves
// them as good as before, and they stay.
func (d *DB) Classify(err error) error {
	if err == nil || errors.Is(err, domain.ErrUnavailable) {
		return err
	}
	switch {
	case d.connectionLost(err):
		d.db.SetMaxIdleConns(0)
		d.db.SetMaxIdleConns(d.pool.MaxIdle)
	case !d.engine.IsBusy(err) && !d.engine.IsUnwritable(err):
		return err
	}
	return &unavailableError{err: err}
}

// connectionLost tells errors of the connection from errors of the statement: those every engine
// shares, then the engine's own.
func (d *DB) connectionLost(err error) bool {
	var ne net.Error
	switch {
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &ne):
		return true
	case errors.Is(err, context.DeadlineExceeded):
		// No query of ours runs long; a deadline passing means waiting for a connection.
		return true
	}
	return d.engine.IsConnectionLost(err)
}

// LostConnection tells whether an operation that failed with err, and changed nothing (a read, a
// BEGIN), is to be tried again: it met a connection the server had lost (its backend terminated,
// the server or a pooler restarted, the network cut it), which the pool hands out until a
// statement finds it dead, and the caller is still waiting. It then drops the pool's idle
// connections (Classify), as lost as this one. A timeout is not tried again: the database is not
// answering, and the caller would wait as long again for the same 503.
//
// Connections that were busy when the server lost them come back to the pool afterwards, and a
// try may draw one of those; each is dropped as it fails, so a caller tries at most once per
// connection the pool holds, and then once on a new one (Pool.LostTries).
func (d *DB) LostConnection(ctx context.Context, err error) bool {
	var ne net.Error
	switch {
	case err == nil, ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return false
	case !d.connectionLost(err):
		return false
	}
	_ = d.Classify(err)
	return true
}

// BeforeWrite is the engine's check that a write would not be lost (Engine.BeforeWrite), failing
// as unavailable.
func (d *DB) BeforeWrite() error {
	if err := d.engine.BeforeWrite(); err != nil {
		return &unavailableError{err: err}
	}
	return nil
}
