package testdb

import (
	"context"
	"fmt"
	"testing"

	"backoffice/internal/store"
)

// RefuseWrites makes the store's database refuse every write from now on, as a read-only database
// does (SQLite's query_only; a PostgreSQL session in read-only mode, as on a standby), or take
// them again when refuse is false. Reads are still answered.
//
// The store's pool is cut to one connection, so that the setting holds for every statement. A
// connection the store holds meanwhile (SQLite's background checkpoint) may be the one kept, and
// the one set closed, so the setting is made until the one connection left reads it back.
func RefuseWrites(t testing.TB, st *store.Store, refuse bool) {
	t.Helper()
	ctx := context.Background()
	db := st.DB()
	db.SetMaxOpenConns(1)
	set, show, want := "PRAGMA query_only = %s", "PRAGMA query_only", map[bool]string{true: "1", false: "0"}[refuse]
	if st.Engine() == "postgres" {
		set, show, want = "SET default_transaction_read_only = %s", "SHOW default_transaction_read_only", map[bool]string{true: "on", false: "off"}[refuse]
	}
	value := map[bool]string{true: "on", false: "off"}[refuse]
	for range 100 {
		if _, err := db.ExecContext(ctx, fmt.Sprintf(set, value)); err != nil {
			t.Fatalf("refuse writes (%v): %v", refuse, err)
		}
		var got string
		if err := db.QueryRowContext(ctx, show).Scan(&got); err != nil {
			t.Fatalf("refuse writes (%v): %v", refuse, err)
		}
		if got == want && db.Stats().OpenConnections == 1 {
			return
		}
	}
	t.Fatalf("refuse writes (%v): the setting did not hold", refuse)
}
