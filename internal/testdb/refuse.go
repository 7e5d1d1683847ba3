package testdb

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"backoffice/internal/store"
)

// RefuseWrites makes the store's database refuse every write from now on, as a read-only database
// does (SQLite's query_only; a PostgreSQL session in read-only mode, as on a standby), or take
// them again when refuse is false. Reads are still answered. The store's pool is cut to one
// connection (onOneConnection).
func RefuseWrites(t testing.TB, st *store.Store, refuse bool) {
	t.Helper()
	if st.Engine() == "postgres" {
		value := map[bool]string{true: "on", false: "off"}[refuse]
		onOneConnection(t, st, "SET default_transaction_read_only = "+value, "SHOW default_transaction_read_only", value)
		return
	}
	onOneConnection(t, st, fmt.Sprintf("PRAGMA query_only = %t", refuse), "PRAGMA query_only", map[bool]string{true: "1", false: "0"}[refuse])
}

// CapPages caps a SQLite database at pages pages (PRAGMA max_page_count), as a full disk would
// once they are used; SQLite keeps the cap at least at the file's size. The store's pool is cut to
// one connection (onOneConnection).
func CapPages(t testing.TB, st *store.Store, pages int) {
	t.Helper()
	var size int
	if err := st.DB().QueryRowContext(context.Background(), "PRAGMA page_count").Scan(&size); err != nil {
		t.Fatal(err)
	}
	want := strconv.Itoa(max(pages, size))
	onOneConnection(t, st, "PRAGMA max_page_count = "+want, "PRAGMA max_page_count", want)
}

// onOneConnection cuts the store's pool to one connection and makes the setting set on it, so
// that it holds for every statement the store runs. A connection the store holds meanwhile
// (SQLite's background checkpoint) may be the one kept, and the one set closed, so the setting is
// made until the one connection left reads it back as want (show).
func onOneConnection(t testing.TB, st *store.Store, set, show, want string) {
	t.Helper()
	ctx := context.Background()
	db := st.DB()
	db.SetMaxOpenConns(1)
	for range 100 {
		if _, err := db.ExecContext(ctx, set); err != nil {
			t.Fatalf("%s: %v", set, err)
		}
		var got string
		if err := db.QueryRowContext(ctx, show).Scan(&got); err != nil {
			t.Fatalf("%s: %v", show, err)
		}
		if got == want && db.Stats().OpenConnections == 1 {
			return
		}
	}
	t.Fatalf("%s: the setting did not hold", set)
}
