// Package column is how Go values are kept in the database's columns, for every package that
// writes or reads rows (the store and its bulk loads, the audit trail, the dataset) and for the audit
// tree's leaf, which encodes an event's time as its row does: times as microseconds since the
// epoch (UTC), nullable values as NULL, the SAM logs' uuids as 16 bytes.
package column

import (
	"bytes"
	"database/sql"
	"fmt"
	"time"

	"backoffice/internal/domain"
)

// Times are stored as microseconds since the epoch, UTC.
func Micros(t time.Time) int64 { return t.UTC().UnixMicro() }

// FromMicros is the time a stored value of Micros names.
func FromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// NullMicros and TimePtr map a nullable time: nil is NULL.
func NullMicros(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: Micros(*t), Valid: true}
}

func TimePtr(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := FromMicros(n.Int64)
	return &t
}

// NullID and IDPtr map a nullable id.
func NullID(id *domain.ID) sql.NullString {
	if id == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: string(*id), Valid: true}
}

func IDPtr(n sql.NullString) *domain.ID {
	if !n.Valid {
		return nil
	}
	id := domain.ID(n.String)
	return &id
}

// NullString and StrPtr map a nullable string.
func NullString(s *string) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *s, Valid: true}
}

func StrPtr(n sql.NullString) *string {
	if !n.Valid {
		return nil
	}
	return &n.String
}

// NullBool and BoolPtr map a nullable boolean.
func NullBool(b *bool) sql.NullBool {
	if b == nil {
		return sql.NullBool{}
	}
	return sql.NullBool{Bool: *b, Valid: true}
}

func BoolPtr(n sql.NullBool) *bool {
	if !n.Valid {
		return nil
	}
	return &n.Bool
}

// SAM action logs store their uuids as 16 bytes (migration 0003). The bytes compare as the
// canonical text does, so ordering by them is ordering by the text.

// UUIDArg is id as a query argument for a uuid column of 16 bytes. Something that is no uuid
// becomes an empty value, which matches no row.
func UUIDArg(id domain.ID) []byte {
	u, ok := id.Bytes()
	if !ok {
		return []byte{}
	}
	return u[:]
}

// IDOfUUID is the canonical text of a uuid column's 16 bytes.
func IDOfUUID(b []byte) (domain.ID, error) {
	if len(b) != 16 {
		return "", fmt.Errorf("store: a uuid of %d bytes", len(b))
	}
	return domain.IDFromBytes([16]byte(b)), nil
}

// AfterEveryUUID sorts after every uuid column's 16 bytes: with the largest date, the end of a
// range of SAM log keys (action_date, id). Each call makes a new slice, the caller's own.
func AfterEveryUUID() []byte { return bytes.Repeat([]byte{0xff}, 17) }
