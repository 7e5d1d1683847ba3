package bulkload_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/store/bulkload"
	"backoffice/internal/testdb"
)

// On PostgreSQL the SAM logs' rows go in by COPY, inside the import's transaction: rows a caller
// left in the batch (no short batch ended it) still go in before the commit, a taken id fails the
// import as ErrSAMLogTaken, and a failed import keeps none of them.
func TestCopyInsideTheImport(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		ids := make([][16]byte, 2*bulkload.SAMLogIDBatch)
		for i := range ids {
			ids[i], _ = testdb.SAMID(i).Bytes()
		}
		var copied bool
		err := st.Load(ctx, func(b *bulkload.Bulk) error {
			var err error
			copied, err = b.AddSAMLogIDs(ids)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := st.Engine() == "postgres"; copied != want {
			t.Errorf("copied: %v, want %v", copied, want)
		}
		stored, err := st.StoredSAMLogIDs(ctx, []domain.ID{testdb.SAMID(0), testdb.SAMID(len(ids) - 1), testdb.SAMID(len(ids))})
		if err != nil || !stored[0] || !stored[1] || stored[2] {
			t.Fatalf("stored after the import: %v, %v", stored, err)
		}

		// Again with one id taken, and new ones: ErrSAMLogTaken, and none of the new ones kept.
		again := make([][16]byte, bulkload.SAMLogIDBatch)
		for i := range again {
			again[i], _ = testdb.SAMID(10000 + i).Bytes()
		}
		again[100] = ids[7]
		err = st.Load(ctx, func(b *bulkload.Bulk) error {
			_, err := b.AddSAMLogIDs(again)
			return err
		})
		if !errors.Is(err, bulkload.ErrSAMLogTaken) {
			t.Fatalf("a taken id: %v, want ErrSAMLogTaken", err)
		}
		if stored, err := st.StoredSAMLogIDs(ctx, []domain.ID{testdb.SAMID(10000)}); err != nil || stored[0] {
			t.Fatalf("a failed import kept its ids: %v, %v", stored, err)
		}
	})
}

// Records go in by batches of rows, but a batch goes as soon as its values reach a few MB: a
// hundred documents' contents are not one statement.
func TestBatcherBoundsItsBytes(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		err := st.Load(context.Background(), func(b *bulkload.Bulk) error {
			in := b.Batcher("partners", "id, name")
			defer in.Close()
			queued := []int{}
			for i := range 3 {
				if err := in.Add(nil, testdb.SAMID(i), strings.Repeat("n", 3<<20)); err != nil {
					return err
				}
				queued = append(queued, in.Queued())
			}
			if !slices.Equal(queued, []int{1, 0, 1}) {
				t.Errorf("rows queued after each add: %v, want [1 0 1]", queued)
			}
			return in.Flush()
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
