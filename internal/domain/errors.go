package domain

import (
	"errors"
	"fmt"
	"time"
)

// Kind is the closed set of application error kinds. The HTTP layer owns the one table that maps
// a kind to a status; everything below it speaks in kinds and codes.
type Kind int

const (
	KindInvalid Kind = iota + 1
	KindUnauthenticated
	KindForbidden
	KindNotFound
	KindConflict
	KindBadGateway
	KindUnavailable
	KindInternal
)

// Error is an application error: a kind, a stable snake_case code for clients and scripts, and a
// human sentence that is safe to show. Err, when set, is the cause; it is logged, never shown.
type Error struct {
	Kind   Kind
	Code   string
	Detail string
	Err    error
	// Parameter names the request parameter at fault (a path or query parameter, or a header),
	// for a program to act on; "" when the error is not about one.
	Parameter string
	// RetryAfter, when positive, is how long until the request can succeed: the answer carries
	// it as Retry-After, in whole seconds rounded up.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Detail, e.Err)
	}
	return e.Code + ": " + e.Detail
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an application error with a formatted detail.
func Errorf(kind Kind, code, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Detail: fmt.Sprintf(format, args...)}
}

// NotFound is the one answer for "does not exist" and "exists but is not yours": the caller must
// not be able to tell the two apart.
func NotFound(what string) *Error {
	return &Error{Kind: KindNotFound, Code: "not_found", Detail: what + " was not found"}
}

// InvalidParameter reports a request parameter (path, query or header) that failed to parse.
func InvalidParameter(name, problem string) *Error {
	return &Error{Kind: KindInvalid, Code: "invalid_parameter", Detail: "parameter " + name + ": " + problem, Parameter: name}
}

// Conflict reports a failed precondition on the current state.
func Conflict(code, detail string) *Error {
	return &Error{Kind: KindConflict, Code: code, Detail: detail}
}

// ErrNotFound is the store's sentinel for a missing or invisible row; callers turn it into NotFound
// with the name of what they looked for.
var ErrNotFound = errors.New("not found")

// AsError returns the application error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
