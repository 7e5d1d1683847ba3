package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"backoffice/internal/store"
)

// A stamp that could not be written is not remembered as written: the next use, within the
// interval, stamps the key.
func TestLastUseIsStampedAgainAfterAFailedWrite(t *testing.T) {
	engineStores(t, func(t *testing.T, st *store.Store, plain *sql.DB) {
		ctx := context.Background()
		key := staffCredential(t, st)
		if _, err := plain.ExecContext(ctx, "UPDATE api_keys SET last_used_at = NULL WHERE id = '"+string(key.ID)+"'"); err != nil {
			t.Fatal(err)
		}
		stamp := func(at time.Time) {
			st.NoteAPIKeyUse(key.ID, at, time.Minute)
			store.WaitBackground(st)
		}
		store.RefuseWrites(t, st, true)
		stamp(fixtureNow)
		store.RefuseWrites(t, st, false)
		stamp(fixtureNow.Add(time.Second))
		var v sql.NullInt64
		if err := plain.QueryRowContext(ctx, "SELECT last_used_at FROM api_keys WHERE id = '"+string(key.ID)+"'").Scan(&v); err != nil {
			t.Fatal(err)
		}
		if !v.Valid || v.Int64 != fixtureNow.Add(time.Second).UnixMicro() {
			t.Errorf("last use %v after a refused stamp and a use a second later; want the later use stamped", v)
		}
	})
}
