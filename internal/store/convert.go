package store

import (
	"database/sql"
	"fmt"
	"math"
	"time"

	"backoffice/internal/domain"
)

var errNotFound = domain.ErrNotFound

// Times are stored as microseconds since the epoch, UTC.
func micros(t time.Time) int64 { return t.UTC().UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

func nullMicros(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: micros(*t), Valid: true}
}

func timePtr(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromMicros(n.Int64)
	return &t
}

func nullID(id *domain.ID) sql.NullString {
	if id == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: string(*id), Valid: true}
}

func idPtr(n sql.NullString) *domain.ID {
	if !n.Valid {
		return nil
	}
	id := domain.ID(n.String)
	return &id
}

func nullString(s *string) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *s, Valid: true}
}

func strPtr(n sql.NullString) *string {
	if !n.Valid {
		return nil
	}
	return &n.String
}

func nullBool(b *bool) sql.NullBool {
	if b == nil {
		return sql.NullBool{}
	}
	return sql.NullBool{Bool: *b, Valid: true}
}

func boolPtr(n sql.NullBool) *bool {
	if !n.Valid {
		return nil
	}
	return &n.Bool
}

// SAM action logs store their uuids as 16 bytes (migration 0003). The bytes compare as the
// canonical text does, so ordering by them is ordering by the text.

// uuidArg is id as a query argument for a uuid column of 16 bytes. Something that is no uuid
// becomes an empty value, which matches no row.
func uuidArg(id domain.ID) []byte {
	u, ok := id.Bytes()
	if !ok {
		return []byte{}
	}
	return u[:]
}

// idOfUUID is the canonical text of a uuid column's 16 bytes.
func idOfUUID(b []byte) (domain.ID, error) {
	if len(b) != 16 {
		return "", fmt.Errorf("store: a uuid of %d bytes", len(b))
	}
	return domain.IDFromBytes([16]byte(b)), nil
}

// pageOffset is how many rows precede page (from 1) of size rows. A page number so large that the
// offset would overflow is taken as the last page that does not: past any possible end, so it
// comes back empty, as any page past the end does.
func pageOffset(page, size int64) int64 {
	page = min(page, math.MaxInt64/size)
	return (page - 1) * size
}
