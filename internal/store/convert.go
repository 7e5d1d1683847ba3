package store

import (
	"math"

	"backoffice/internal/domain"
)

var errNotFound = domain.ErrNotFound

// pageOffset is how many rows precede page (from 1) of size rows. A page number so large that the
// offset would overflow is taken as the last page that does not: past any possible end, so it
// comes back empty, as any page past the end does.
func pageOffset(page, size int64) int64 {
	page = min(page, math.MaxInt64/size)
	return (page - 1) * size
}
