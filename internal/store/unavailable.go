package store

import (
	"context"

	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// ErrUnavailable is domain.ErrUnavailable: see there.
var ErrUnavailable = domain.ErrUnavailable

// ErrWriteWait is sqltx.ErrWriteWait: see there.
var ErrWriteWait = sqltx.ErrWriteWait

// rereading is read run once more when it failed on a lost connection (see sqltx.DB.LostConnection): for
// the reads of several rows, which a server process ended in the middle of its result fails after
// the first rows (sqltx.DB.Query runs the statement again only when it fails before any). A read
// changes nothing, and each run builds its answer afresh.
func rereading[T any](ctx context.Context, q *sqltx.DB, read func() (T, error)) func() (T, error) {
	return func() (T, error) {
		v, err := read()
		if q.LostConnection(ctx, err) {
			v, err = read()
		}
		return v, err
	}
}
