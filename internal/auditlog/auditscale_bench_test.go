package auditlog_test

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"backoffice/internal/auditlog"
	"backoffice/internal/checkpoint"
	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// benchEventsVar sets how many events BenchmarkAuditLogAtScale builds its trail of; without it
// the bench is skipped, as building a long trail takes minutes.
const benchEventsVar = "BACKOFFICE_BENCH_EVENTS"

// BenchmarkAuditLogAtScale builds a trail of $BACKOFFICE_BENCH_EVENTS events with the store's own
// writer (in groups, each in its transaction) and measures what must not grow with it: serve's
// start from the newest checkpoint (start), an inclusion proof and its check (prove), and an
// append (append: one event a commit, as a lone decrypt; append-group: a group of the writer's
// size). The build and one walk of the whole trail (what `audit verify` without a trusted
// checkpoint pays) are logged with -v, for comparison.
//
//	BACKOFFICE_BENCH_EVENTS=1000000 go test ./internal/store -run '^$' -bench AuditLogAtScale -benchtime 200x -timeout 0 -v
func BenchmarkAuditLogAtScale(b *testing.B) {
	n, err := strconv.ParseInt(os.Getenv(benchEventsVar), 10, 64)
	if err != nil || n < 1 {
		b.Skipf("set %s to the number of events to build the trail of", benchEventsVar)
	}
	for _, engine := range testdb.Engines() {
		b.Run(engine, func(b *testing.B) {
			ctx := context.Background()
			st := testdb.Open(b, engine)
			testdb.SealAsServeDoes(b, st)
			started := time.Now()
			buildTrail(b, st, n)
			b.Logf("%s: built %d events in %v (%.0f events/s)", engine, n, time.Since(started), float64(n)/time.Since(started).Seconds())
			file, base := signAtScale(b, st, n)

			b.Run("start", func(b *testing.B) {
				for b.Loop() {
					startAtScale(b, st, file, base, n)
				}
			})
			b.Run("prove", func(b *testing.B) {
				r := st.AuditHashReader(ctx)
				root, err := tlog.TreeHash(n, r)
				if err != nil {
					b.Fatal(err)
				}
				hashes := 0
				for b.Loop() {
					i := rand.Int64N(n)
					p, err := tlog.ProveRecord(n, i, r)
					if err != nil {
						b.Fatal(err)
					}
					leaf, err := r.ReadHashes([]int64{tlog.StoredHashIndex(0, i)})
					if err != nil {
						b.Fatal(err)
					}
					if err := tlog.CheckRecord(p, n, root, i, leaf[0]); err != nil {
						b.Fatal(err)
					}
					hashes = max(hashes, len(p))
				}
				b.ReportMetric(float64(hashes), "hashes/proof")
				b.ReportMetric(float64(hashes*tlog.HashSize), "bytes/proof")
			})
			b.Run("append", func(b *testing.B) {
				i := 0
				for b.Loop() {
					i++
					if err := st.RecordAudit(ctx, decryptEvent(n+int64(i))); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("append-group", func(b *testing.B) {
				const group = 128
				for b.Loop() {
					appendGroup(b, st, 0, group)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*group), "ns/event")
			})
		})
	}
}

// decryptEvent is the i-th decrypt's event of the bench's trail.
func decryptEvent(i int64) domain.AuditEvent {
	return domain.AuditEvent{At: fixtureNow.Add(time.Duration(i) * time.Millisecond), ActorUserID: staffUser,
		Action: "principal.decrypt", TargetID: principalA.String(), Outcome: domain.OutcomeGranted, Detail: "field ssn"}
}

// buildTrail appends n decrypts' events in groups, each group in its own transaction.
func buildTrail(b *testing.B, st *store.Store, n int64) {
	const group = 2000
	for from := int64(0); from < n; from += group {
		appendGroup(b, st, from, min(group, n-from))
	}
}

// appendGroup appends count events, numbered from from, in one transaction.
func appendGroup(b *testing.B, st *store.Store, from, count int64) {
	events := make([]domain.AuditEvent, count)
	for i := range events {
		events[i] = decryptEvent(from + int64(i))
	}
	err := auditlog.InTx(context.Background(), st.Trail(), func(q *sqltx.Tx) error {
		return auditlog.AppendAuditGroup(context.Background(), st.Trail(), q, events)
	})
	if err != nil {
		b.Fatal(err)
	}
}

// signAtScale walks the whole trail from its genesis, as a first checkpoint does, and signs a
// checkpoint of it into a file: what start carries on from.
func signAtScale(b *testing.B, st *store.Store, n int64) (file string, base auditlog.ChainExpect) {
	ctx := context.Background()
	ring := testdb.Ring(b)
	started := time.Now()
	f, err := auditlog.FollowAuditChainResting(ctx, st.Trail(), auditlog.NoRest, ring, nil, nil) // the whole walk's rests are serve's courtesy, not its cost
	if err != nil {
		b.Fatal(err)
	}
	v, err := f.Next(ctx)
	if err == nil {
		err = v.Err()
	}
	if err != nil || v.Seq() != n {
		b.Fatalf("the walk verified up to %d (%v), want %d", v.Seq(), err, n)
	}
	b.Logf("walked the whole trail of %d events in %v", n, time.Since(started))
	size, root := v.Tree()
	key, err := ring.CheckpointKey(ring.ActiveKeyID())
	if err != nil {
		b.Fatal(err)
	}
	cp, err := checkpoint.Sign(checkpoint.Head{Size: size, Root: root, Link: v.Head(), Digest: v.Digest()},
		checkpoint.DefaultOrigin, "", time.Now(), ring.ActiveKeyID(), key)
	if err != nil {
		b.Fatal(err)
	}
	file = filepath.Join(b.TempDir(), "checkpoints")
	if err := os.WriteFile(file, append(cp.Note, '\n'), 0o600); err != nil {
		b.Fatal(err)
	}
	link, _ := hex.DecodeString(v.Head())
	return file, auditlog.ChainExpect{Seq: n, Link: link, Digest: v.Digest(), What: "the bench's checkpoint"}
}

// startAtScale is what serve's start does with the checkpoints file and the store before it
// signs (newCheckpointer, then the first walk's start): the file's last checkpoint read and its
// signature checked, the store's tree proved to extend it, and the walk started from it and
// brought to the trail's end.
func startAtScale(b *testing.B, st *store.Store, file string, base auditlog.ChainExpect, n int64) {
	ctx := context.Background()
	ring := testdb.Ring(b)
	tail, err := checkpoint.ReadLast(file)
	if err != nil || tail.Last == nil {
		b.Fatalf("read the checkpoint: %v", err)
	}
	pub, err := ring.CheckpointPublicKey(tail.Last.KeyID)
	if err != nil {
		b.Fatal(err)
	}
	if err := checkpoint.CheckPredecessor(tail.Last.Checkpoint, map[string]ed25519.PublicKey{tail.Last.KeyID: pub}); err != nil {
		b.Fatal(err)
	}
	r := st.AuditHashReader(ctx)
	size, err := st.AuditTreeSize(ctx)
	if err != nil {
		b.Fatal(err)
	}
	root, err := tlog.TreeHash(size, r)
	if err != nil {
		b.Fatal(err)
	}
	if err := checkpoint.Extends(size, root, tail.Last.Checkpoint, r); err != nil {
		b.Fatal(err)
	}
	f, err := auditlog.FollowAuditChainResting(ctx, st.Trail(), auditlog.NoRest, ring, &base, nil)
	if err != nil {
		b.Fatal(err)
	}
	if v, err := f.Next(ctx); err != nil || v.Seq() < n {
		b.Fatalf("the walk from the checkpoint verified up to %d (%v), want at least %d", v.Seq(), err, n)
	}
}
