package store

import (
	"database/sql"
	"errors"
	"fmt"

	"backoffice/internal/domain"
)

var errNotFound = domain.ErrNotFound

// noRows turns sql.ErrNoRows into the domain's not-found sentinel.
func noRows(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return errNotFound
	}
	return err
}

// notFoundOr passes the not-found sentinel through and wraps anything else with context.
func notFoundOr(err error, format string, args ...any) error {
	if err = noRows(err); err == errNotFound {
		return err
	}
	return fmt.Errorf("store: "+format+": %w", append(args, err)...)
}
