package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"backoffice/internal/auth"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// BenchmarkAPIKeyUse is a request's authentication with an API key (auth.Verify: the cached
// credential read and the last-use stamp) on each engine, a minute and more after the key's last
// recorded use, as every request of a busy key is once its cached credential is that old:
//
//   - once_a_while: the store as it is, which remembers what it stamped and writes once per key
//     a minute;
//   - every_use: the store's own UPDATE, with its condition (it changes no row within the
//     minute), run at every use instead;
//   - every_use_unconditional: the last-use time written at every use.
//
// Each runs one use at a time, then from 16 goroutines per core (parallel), as requests come
// together. docs/performance.md has the figure.
//
//	go test ./internal/store -run '^$' -bench APIKeyUse -benchmem -cpu 1 -count 6
func BenchmarkAPIKeyUse(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		for _, way := range []struct {
			name  string
			write string // at every use; none: the store's NoteAPIKeyUse
		}{
			{"once_a_while", ""},
			{"every_use", `UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at <= ?)`},
			{"every_use_unconditional", `UPDATE api_keys SET last_used_at = ? WHERE id = ?`},
		} {
			b.Run(engine+"/"+way.name, func(b *testing.B) {
				verify, st := keyUse(b, engine, way.write)
				for b.Loop() {
					verify()
				}
				store.WaitBackground(st)
			})
			b.Run(engine+"/"+way.name+"/parallel", func(b *testing.B) {
				verify, st := keyUse(b, engine, way.write)
				b.SetParallelism(16)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						verify()
					}
				})
				store.WaitBackground(st)
			})
		}
	}
}

// keyUse is the staff key's authentication on a fresh store of the engine holding the fixture,
// an hour after the fixture's time, its first use done (the credential cached and stamped). With
// write, the store's last-use stamp is replaced by that statement, run at every use.
func keyUse(b *testing.B, engine, write string) (verify func(), st *store.Store) {
	st = testdb.Open(b, engine)
	testdb.Import(b, st, fixture())
	now := fixtureNow.Add(time.Hour)
	var lookup auth.Lookup = st
	if write != "" {
		lookup = writeEveryUse{Store: st, b: b, query: write}
	}
	a := auth.New(lookup, func() time.Time { return now })
	at := auth.NewAttempt("Api-Key " + staffKey)
	verify = func() {
		if _, err := a.Verify(context.Background(), at); err != nil {
			b.Error(err)
		}
	}
	verify()
	store.WaitBackground(st)
	return verify, st
}

// writeEveryUse is the store with its last-use stamp replaced by query, run at every use.
type writeEveryUse struct {
	*store.Store
	b     *testing.B
	query string
}

func (w writeEveryUse) NoteAPIKeyUse(id domain.ID, at time.Time, every time.Duration) {
	args := []any{at.UnixMicro(), id, at.Add(-every).UnixMicro()}
	if !strings.Contains(w.query, "<=") {
		args = args[:2]
	}
	if err := store.Exec(context.Background(), w.Store, w.query, args...); err != nil {
		w.b.Error(err)
	}
}
