package store_test

import (
	"testing"

	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// An import moves the read cache's generation once, in its transaction: on an engine whose
// writers run side by side, before it first takes the audit chain's head (the fixture has audit
// events to append), and not again before it commits, which would only take the lock it holds and
// write a number nobody saw. The commit still moves it: the cache answers nothing it filed before.
func TestImportMovesTheGenerationOnce(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		var moves int
		store.CountGenerationMoves(st, &moves)
		before := generation(t, store.DB(st))
		testdb.Import(t, st, fixture())
		if moves != 1 {
			t.Errorf("the import moved the generation %d times; want once", moves)
		}
		if generation(t, store.DB(st)) == before {
			t.Error("the import's commit left the generation where it was")
		}
	})
}
