package store_test

import (
	"testing"

	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// An import moves the read cache's generation itself once, in its transaction: on an engine whose
// writers run side by side, before it first takes the audit chain's head (the fixture has audit
// events to append), the triggers making the move they owe for the rest as it commits; on an
// engine of one writer at a time, once it has written its rows. After the commit the generation
// has moved: the cache answers nothing it filed before.
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
