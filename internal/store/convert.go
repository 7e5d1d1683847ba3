package store

import (
	"database/sql"
	"math"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/store/column"
)

var errNotFound = domain.ErrNotFound

// The store's names for package column's mappings (see there).

func micros(t time.Time) int64              { return column.Micros(t) }
func fromMicros(us int64) time.Time         { return column.FromMicros(us) }
func nullMicros(t *time.Time) sql.NullInt64 { return column.NullMicros(t) }
func timePtr(n sql.NullInt64) *time.Time    { return column.TimePtr(n) }
func nullID(id *domain.ID) sql.NullString   { return column.NullID(id) }
func idPtr(n sql.NullString) *domain.ID     { return column.IdPtr(n) }
func nullString(s *string) sql.NullString   { return column.NullString(s) }
func strPtr(n sql.NullString) *string       { return column.StrPtr(n) }
func nullBool(b *bool) sql.NullBool         { return column.NullBool(b) }
func boolPtr(n sql.NullBool) *bool          { return column.BoolPtr(n) }
func uuidArg(id domain.ID) []byte           { return column.UUIDArg(id) }
func idOfUUID(b []byte) (domain.ID, error)  { return column.IDOfUUID(b) }

// pageOffset is how many rows precede page (from 1) of size rows. A page number so large that the
// offset would overflow is taken as the last page that does not: past any possible end, so it
// comes back empty, as any page past the end does.
func pageOffset(page, size int64) int64 {
	page = min(page, math.MaxInt64/size)
	return (page - 1) * size
}
