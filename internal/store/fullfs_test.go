package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// Readiness tells the truth on a full filesystem. The database is on a small tmpfs (SQLite: its
// file; PostgreSQL: its tablespace, on a server on this host), which a file of the test's fills a
// chunk at a time. At each step the write probe of GET /readyz runs, and right after it, at the
// same free space, the writes requests make: a decrypt's audit event and a push's lease. The
// probe never passes when one of them fails for want of room; the filling goes on until they do
// (else the test proves nothing), and then the probe fails too; with the room given back, all
// pass again. Needs root for the tmpfs (skipped otherwise, saying so; CI runs as root).
func TestReadinessTellsTheTruthOnAFullFilesystem(t *testing.T) {
	for _, c := range []struct {
		engine      string
		size, chunk int64
	}{{"sqlite", 8 << 20, 32 << 10}, {"postgres", 48 << 20, 128 << 10}} {
		t.Run(c.engine, func(t *testing.T) {
			ctx := context.Background()
			dir := testdb.SmallFilesystem(t, c.size)
			url := "sqlite:" + filepath.Join(dir, "store.db")
			if c.engine == "postgres" {
				url = testdb.PostgresIn(t, dir)
			}
			st := testdb.OpenURL(t, url)
			testdb.Import(t, st, fixture())
			decrypt := func() error {
				return st.RecordAudit(ctx, domain.AuditEvent{At: time.Now(), ActorUserID: staffUser, Action: "principal.ssn.decrypt",
					TargetID: string(principalA), Outcome: domain.OutcomeGranted})
			}
			push := func() error {
				if _, err := st.AcquirePushLease(ctx, itemA, "probe-test", time.Now(), time.Minute); err != nil {
					return err
				}
				return st.ReleasePushLease(ctx, itemA, "probe-test")
			}
			writes := map[string]func() error{"decrypt": decrypt, "push": push}
			for name, w := range writes {
				if err := w(); err != nil {
					t.Fatalf("%s with room: %v", name, err)
				}
			}
			if err := st.Writable(ctx); err != nil {
				t.Fatalf("write probe with room: %v", err)
			}

			filler := testdb.NewFiller(t, dir)
			failed, afterFull := 0, 0
			for step := 0; afterFull < 200; step++ {
				if filler.Take(t, int(c.chunk)) {
					afterFull++
				}
				if c.engine == "postgres" {
					// As autovacuum would: a probe that wrote to a table of its own would find room
					// in the pages it has, and prove nothing of the disk. (On a full disk the vacuum
					// may fail to extend its own map: it is the probe that is under test.)
					_, _ = store.DB(st).ExecContext(ctx, "VACUUM readiness_probe")
				}
				probe := st.Writable(ctx)
				for name, w := range writes {
					err := w()
					if err == nil {
						continue
					}
					if !errors.Is(err, store.ErrUnavailable) {
						t.Fatalf("step %d: %s failed otherwise than unavailable: %v", step, name, err)
					}
					failed++
					if probe == nil {
						t.Fatalf("step %d: the write probe passed, and a %s right after it failed: %v", step, name, err)
					}
				}
			}
			if failed == 0 {
				t.Fatal("the filesystem filled, and no decrypt or push failed: the test proved nothing")
			}
			if err := st.Writable(ctx); !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("write probe on the full filesystem: %v, want ErrUnavailable", err)
			}
			t.Logf("%d writes failed for want of room, each after a probe that had failed", failed)

			filler.Free(t)
			if err := st.Writable(ctx); err != nil {
				t.Errorf("write probe once the room is back: %v", err)
			}
			for name, w := range writes {
				if err := w(); err != nil {
					t.Errorf("%s once the room is back: %v", name, err)
				}
			}
		})
	}
}
