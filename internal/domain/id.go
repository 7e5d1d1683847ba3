// Package domain holds the types every other package speaks in: identifiers, the actor making a
// request, the records of the back office, and the closed set of application errors.
package domain

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"time"
)

// ID is a uuid in the canonical lower-case form. Values of this type have been through ParseID,
// so inner code never sees an unchecked identifier.
type ID string

// ErrBadID is returned by ParseID for anything that is not a uuid as ParseID spells the rule.
var ErrBadID = errors.New("not a uuid")

const (
	nilID = "00000000-0000-0000-0000-000000000000"
	maxID = "ffffffff-ffff-ffff-ffff-ffffffffffff"
)

// ParseID accepts 8-4-4-4-12 hex digits with a version digit 1-8 and a variant digit 8, 9, a or b
// (either case), plus the nil and max ids. Ids differing only in case are the same id.
func ParseID(s string) (ID, error) {
	if len(s) != 36 {
		return "", ErrBadID
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return "", ErrBadID
			}
		default:
			if !isHex(c) {
				return "", ErrBadID
			}
		}
	}
	low := strings.ToLower(s)
	if low == nilID || low == maxID {
		return ID(low), nil
	}
	if v := low[14]; v < '1' || v > '8' {
		return "", ErrBadID
	}
	switch low[19] {
	case '8', '9', 'a', 'b':
	default:
		return "", ErrBadID
	}
	return ID(low), nil
}

// IsCanonical reports whether s is an id as ParseID returns it, so that ParseID(s) would give s
// back: the same rules, lower case only. It allocates nothing, for checking ids by the million.
func IsCanonical(s string) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	bad := false
	for i := range 36 {
		bad = bad || !canonicalChar[i][s[i]]
	}
	if bad {
		return false
	}
	if s == nilID || s == maxID {
		return true
	}
	switch s[19] {
	case '8', '9', 'a', 'b':
		return '1' <= s[14] && s[14] <= '8'
	}
	return false
}

// canonicalChar[i][c] says whether byte c may stand at position i of a canonical id.
var canonicalChar = func() (t [36][256]bool) {
	for i := range t {
		switch i {
		case 8, 13, 18, 23:
			t[i]['-'] = true
		default:
			for _, c := range "0123456789abcdef" {
				t[i][c] = true
			}
		}
	}
	return t
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// String returns the canonical form.
func (id ID) String() string { return string(id) }

// NewID returns a random (version 4) id.
func NewID() ID {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return formatID(b, 0x40)
}

// NewTimeOrderedID returns a version 7 id (RFC 9562): now's Unix time in milliseconds, then
// random bits. Ids of later milliseconds sort later (within one millisecond the order is random),
// so rows that are only ever appended (audit events) land at the end of their primary-key index
// instead of on a random page of it, which is what keeps a busy append-only table's writes small.
func NewTimeOrderedID(now time.Time) ID {
	var b [16]byte
	ms := uint64(now.UnixMilli())
	for i := range 6 { // 48 bits of milliseconds, big-endian
		b[i] = byte(ms >> (40 - 8*i))
	}
	_, _ = rand.Read(b[6:])
	return formatID(b, 0x70)
}

// formatID stamps the version and the RFC 4122 variant into b and writes it in canonical form.
func formatID(b [16]byte, version byte) ID {
	b[6] = b[6]&0x0f | version
	b[8] = b[8]&0x3f | 0x80
	return IDFromBytes(b)
}

// idGroups are the hex groups of an id's text and where their bytes go.
var idGroups = [...]struct{ from, to, byteAt int }{{0, 8, 0}, {9, 13, 4}, {14, 18, 6}, {19, 23, 8}, {24, 36, 10}}

// IDFromBytes is the canonical text of a uuid's 16 bytes.
func IDFromBytes(b [16]byte) ID {
	out := [36]byte{8: '-', 13: '-', 18: '-', 23: '-'}
	for _, g := range idGroups {
		hex.Encode(out[g.from:g.to], b[g.byteAt:g.byteAt+(g.to-g.from)/2])
	}
	return ID(out[:])
}

// Bytes is the id's 16 bytes, read from its 8-4-4-4-12 hex form in either case; ok is false for
// anything else. The bytes compare as the canonical text does, so stores may key by them.
func (id ID) Bytes() (u [16]byte, ok bool) {
	if len(id) != 36 || id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-' {
		return u, false
	}
	// hex.Decode takes either case, as ParseID does.
	for _, g := range idGroups {
		if _, err := hex.Decode(u[g.byteAt:], []byte(id[g.from:g.to])); err != nil {
			return [16]byte{}, false
		}
	}
	return u, true
}
