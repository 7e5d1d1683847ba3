package store

import (
	"database/sql"
	"fmt"
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

// parseUUID is the 16 bytes of id, a uuid in 8-4-4-4-12 hex form (either case); ok is false for
// anything else.
func parseUUID(id domain.ID) (u [16]byte, ok bool) {
	if len(id) != 36 || id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-' {
		return u, false
	}
	j := 0
	for i := 0; i < 36; i += 2 {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++ // the hyphen
		}
		hi, lo := unhex(id[i]), unhex(id[i+1])
		if hi > 15 || lo > 15 {
			return u, false
		}
		u[j] = hi<<4 | lo
		j++
	}
	return u, true
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10
	}
	return 255
}

// uuidArg is id as a query argument for a uuid column of 16 bytes. Something that is no uuid
// becomes an empty value, which matches no row.
func uuidArg(id domain.ID) []byte {
	u, ok := parseUUID(id)
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
	const digits = "0123456789abcdef"
	var s [36]byte
	j := 0
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			s[j] = '-'
			j++
		}
		s[j], s[j+1] = digits[c>>4], digits[c&15]
		j += 2
	}
	return domain.ID(s[:]), nil
}
