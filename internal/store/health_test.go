package store_test

import (
	"testing"

	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// The write probe passes on a database that takes writes, each statement given the arguments its
// engine gave it (SQLite's insert needs the probe row: its column is NOT NULL), and leaves no row.
func TestWriteProbePassesAndLeavesNoRow(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		for range 2 {
			if err := st.Writable(ctx); err != nil {
				t.Fatalf("write probe: %v", err)
			}
		}
		var n int
		if err := store.DB(st).QueryRowContext(ctx, `SELECT COUNT(*) FROM readiness_probe`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("readiness_probe holds %d rows after the probes; want none", n)
		}
	})
}
