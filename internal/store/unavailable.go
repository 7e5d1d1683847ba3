package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"

	"backoffice/internal/domain"
)

// ErrUnavailable is domain.ErrUnavailable: see there.
var ErrUnavailable = domain.ErrUnavailable

// unavailableError keeps the driver's error for the log while matching ErrUnavailable.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string        { return "database unavailable: " + e.err.Error() }
func (e *unavailableError) Unwrap() error        { return e.err }
func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }

// classify marks the errors of a database that cannot answer now with ErrUnavailable and passes
// anything else through unchanged, so that not-found and constraint errors keep their meaning.
//
// On PostgreSQL the pool's idle connections are closed then: once the database was lost they are
// all dead (a server restart or a network cut took them), yet the pool would hand each out once
// more after the database returned, failing one request per connection. Shrinking the idle limit
// closes them now, and restoring it lets new ones be kept.
func (s *Store) classify(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) || !s.unavailable(err) {
		return err
	}
	// A SQLite connection is an open file, and a busy or locked database leaves it as good as
	// before: closing the pool's would only make the next requests reopen them (and the audit
	// writer retries a busy lock every few milliseconds).
	if s.engine.Name() != "sqlite" {
		s.db.SetMaxIdleConns(0)
		s.db.SetMaxIdleConns(s.pool.MaxIdleConns)
	}
	return &unavailableError{err: err}
}

// unavailable tells errors of the connection from errors of the statement: those every engine
// shares, then the engine's own.
func (s *Store) unavailable(err error) bool {
	var ne net.Error
	switch {
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &ne):
		return true
	case errors.Is(err, context.DeadlineExceeded):
		// No query of ours runs long; a deadline passing means waiting for a connection.
		return true
	}
	return s.engine.IsUnavailable(err)
}
