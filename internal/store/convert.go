package store

import (
	"backoffice/internal/domain"
)

var errNotFound = domain.ErrNotFound
