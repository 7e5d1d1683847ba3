package domain

import "errors"

// ErrUnavailable marks an error that came from losing the database (it is down, unreachable, or
// dropped the connection) or from a database that takes no write (full, read-only), not from the
// request. Callers answer it with "try again later" rather than as their own fault; the store
// reconnects by itself once the database is back, and writes again once it has room.
var ErrUnavailable = errors.New("the database is unavailable")
