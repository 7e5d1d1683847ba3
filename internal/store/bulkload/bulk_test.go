package bulkload_test

import (
	"errors"
	"testing"

	"backoffice/internal/store"
	"backoffice/internal/store/bulkload"
	"backoffice/internal/testdb"
)

// An insert that meets a taken key skips the row and says so, without aborting the transaction;
// Load commits only when its function succeeds.
func TestBulkLoad(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		errStop := errors.New("stop")
		err := st.Load(ctx, func(b *bulkload.Bulk) error {
			ins, err := b.Inserter("partners", "id, name")
			if err != nil {
				return err
			}
			defer ins.Close()
			for _, want := range []bool{true, false} {
				added, err := ins.Insert(partnerA, "A")
				if err != nil || added != want {
					t.Errorf("insert: added = %v, %v; want %v", added, err, want)
				}
			}
			if ok, err := b.Exists("partners", partnerA); err != nil || !ok {
				t.Errorf("exists after the insert = %v, %v", ok, err)
			}
			return errStop
		})
		if !errors.Is(err, errStop) {
			t.Fatalf("load = %v, want its function's error", err)
		}
		if empty, err := st.IsEmpty(ctx); err != nil || !empty {
			t.Errorf("after a failed load: empty = %v, %v; want nothing kept", empty, err)
		}
		err = st.Load(ctx, func(b *bulkload.Bulk) error {
			ins, err := b.Inserter("partners", "id, name")
			if err != nil {
				return err
			}
			defer ins.Close()
			_, err = ins.Insert(partnerB, "B")
			return err
		})
		if empty, _ := st.IsEmpty(ctx); err != nil || empty {
			t.Errorf("after a load: %v, empty = %v; want the partner kept", err, empty)
		}
	})
}
