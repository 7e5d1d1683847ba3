package secrets

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// MaxKeyIDLength bounds a key id: it is stored beside every ciphertext and printed in logs.
const MaxKeyIDLength = 32

// ValidKeyID reports whether id can name a key: 1 to 32 of A-Z, a-z, 0-9, '_' and '-'. Ids are
// written into every row and log line, so they must be short and need no quoting.
func ValidKeyID(id string) bool {
	if id == "" || len(id) > MaxKeyIDLength {
		return false
	}
	for _, c := range []byte(id) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ParseKeyRing reads BACKOFFICE_MASTER_KEYS: "id:base64key" entries separated by commas (or new
// lines, which a keys file may use), the first being the active key. Errors name the entry by its
// position and id, never by its key material.
func ParseKeyRing(spec string) ([]Key, error) {
	entries := strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' })
	var keys []Key
	for i, entry := range entries {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		k, err := parseRingEntry(entry)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
		}
		if err := checkDistinct(keys, k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("no keys: want id:base64key[,id:base64key…]")
	}
	return keys, nil
}

func parseRingEntry(entry string) (Key, error) {
	id, b64, ok := strings.Cut(entry, ":")
	if !ok {
		return Key{}, errors.New("want id:base64key")
	}
	id = strings.TrimSpace(id)
	if !ValidKeyID(id) {
		// Not quoted: an entry written key first ("base64key:id") has the key here.
		return Key{}, fmt.Errorf("the part before ':' (%d characters) is not a key id: want id:base64key, the id 1 to %d of A-Z a-z 0-9 _ -",
			len(id), MaxKeyIDLength)
	}
	raw, err := decodeKey(b64)
	if err != nil {
		return Key{}, fmt.Errorf("key %q %w", id, err)
	}
	return Key{ID: id, Bytes: raw}, nil
}

// checkDistinct refuses a repeated id (which key would open?) and a key given twice under two ids
// (values would be split between names for no reason, and removing one name would strand some).
func checkDistinct(keys []Key, k Key) error {
	for _, prev := range keys {
		if prev.ID == k.ID {
			return fmt.Errorf("key id %q appears twice", k.ID)
		}
		if bytes.Equal(prev.Bytes, k.Bytes) {
			return fmt.Errorf("keys %q and %q are the same key", prev.ID, k.ID)
		}
	}
	return nil
}
