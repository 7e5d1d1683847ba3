package testdb

import (
	"crypto/sha256"
	"testing"

	"backoffice/internal/secrets"
)

// DefaultKeyID names the key of Ring when no id is given.
const DefaultKeyID = "ktest"

// Key derives a master key from its id, so that rings built apart (a test's store and the
// service under test, two replicas) agree on every key.
func Key(id string) secrets.Key {
	sum := sha256.Sum256([]byte("test master key " + id))
	return secrets.Key{ID: id, Bytes: sum[:]}
}

// Ring is a key ring of the keys with these ids, the first active; DefaultKeyID without ids.
func Ring(t testing.TB, ids ...string) *secrets.Ring {
	t.Helper()
	if len(ids) == 0 {
		ids = []string{DefaultKeyID}
	}
	keys := make([]secrets.Key, len(ids))
	for i, id := range ids {
		keys[i] = Key(id)
	}
	r, err := secrets.NewRing(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
