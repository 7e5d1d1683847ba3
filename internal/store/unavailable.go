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

// classify marks connection-level failures with ErrUnavailable and passes anything else through
// unchanged, so that not-found and constraint errors keep their meaning.
func (e *engine) classify(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) || !e.connectionLost(err) {
		return err
	}
	if e.lost != nil {
		e.lost()
	}
	return &unavailableError{err: err}
}

// connectionLost tells errors of the connection from errors of the statement: those every
// engine shares, then the engine's own.
func (e *engine) connectionLost(err error) bool {
	var ne net.Error
	switch {
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &ne):
		return true
	case errors.Is(err, context.DeadlineExceeded):
		// No query of ours runs long; a deadline passing means waiting for a connection.
		return true
	}
	return e.unavailable != nil && e.unavailable(err)
}
