package auditlog_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"backoffice/internal/auditlog"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
	"backoffice/internal/testdb"

	"golang.org/x/mod/sumdb/tlog"
)

// The checkpoint signer's walk checks the trail against what this process committed
// (auditlog.CommitMemory): an event deleted after it was answered for, with the gap closed by the
// next append or not, and a memory that overflowed, are breaks naming the seq, and stay.
func TestFollowChecksThisProcessCommits(t *testing.T) {
	for _, c := range []struct {
		name  string
		limit int
		// attack runs after the trail's 3 events and the memory's first walk; then 2 more events
		// are written.
		attack string
		// foreign: another process appends one event before the 2 more.
		foreign bool
		seq     int64
		says    string
	}{
		{name: "the newest deleted, the gap closed by the next append", attack: `DELETE FROM audit_events WHERE seq = 5`, seq: 5,
			says: "committed another audit event at this seq"},
		{name: "the newest deleted", attack: `DELETE FROM audit_events WHERE seq = 5`, seq: 5,
			says: "the trail ends before it"},
		// Another process appends first, so the memory keeps the events after it until a walk
		// works out their digests: two of them are more than it keeps.
		{name: "more events than the memory keeps", limit: 1, foreign: true, seq: 6,
			says: "remembers none from here on"},
	} {
		t.Run(c.name, func(t *testing.T) {
			testdb.ForEach(t, func(t *testing.T, st *store.Store) {
				testdb.SealAsServeDoes(t, st)
				mem := st.RememberCommits()
				auditEvents(t, st, 0, 3)
				f, err := st.FollowAuditChain(ctx, testdb.Ring(t), nil, mem)
				if err != nil {
					t.Fatal(err)
				}
				if v, err := f.Next(ctx); err != nil || v.Seq() != 3 {
					t.Fatalf("Next: seq %d, %v; want 3", v.Seq(), err)
				}
				if c.limit > 0 {
					auditlog.LimitMemory(mem, c.limit)
				}
				if c.foreign {
					auditEvents(t, testdb.OpenURL(t, testdb.URLOf(t, st)), 3, 1)
				}
				auditEvents(t, st, 3, 2) // seq 4 and 5 (5 and 6 after another process's)
				if c.attack != "" {
					sqlExec(t, st, c.attack)
				}
				if strings.Contains(c.name, "closed") {
					// The tree's rows of seq 5 go too, or the writer would not append.
					sqlExec(t, st, fmt.Sprintf(`DELETE FROM audit_tree WHERE id >= %d`, tlog.StoredHashCount(4)))
					auditEvents(t, st, 5, 1) // numbered 5 again, linked after 4
				}
				for range 2 {
					var b *auditlog.ChainBreak
					if _, err := f.Next(ctx); !errors.As(err, &b) || b.Seq != c.seq || !strings.Contains(b.Error(), c.says) {
						t.Fatalf("Next: %v; want a break at seq %d saying %q", err, c.seq, c.says)
					}
				}
			})
		})
	}
}

// An event a transaction records in its own body (a credential's creation) is remembered too,
// once its transaction committed: deleted, and the gap linked over, it is a break at its seq.
func TestFollowChecksEventsOfTransactions(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.SealAsServeDoes(t, st)
		seed(t, st, testdb.Ring(t, "k1"), 0)
		f, v := followFromHere(t, st)
		key, prefix := secrets.NewAPIKey()
		id := domain.NewID()
		k := store.NewAPIKey{ID: id, UserID: staffID, Name: "ci", Prefix: prefix, Hash: secrets.HashCredential(domain.CredentialAPIKey, key), CreatedAt: time.Now().UTC()}
		if err := st.CreateAPIKey(ctx, k, event("api_key.create", id)); err != nil {
			t.Fatal(err)
		}
		created := v.Seq() + 1
		sqlExec(t, st, fmt.Sprintf(`DELETE FROM audit_events WHERE seq = %d`, created))
		sqlExec(t, st, fmt.Sprintf(`DELETE FROM audit_tree WHERE id >= %d`, tlog.StoredHashCount(created-1)))
		auditEvents(t, st, 0, 1) // numbered as the creation was, linked over the gap
		var b *auditlog.ChainBreak
		if _, err := f.Next(ctx); !errors.As(err, &b) || b.Seq != created || !strings.Contains(b.Error(), "committed another audit event at this seq") {
			t.Fatalf("Next: %v; want a break at seq %d", err, created)
		}
	})
}

// The signer carries its walk over what this process committed without reading it back, and
// signs the same head a walk of the rows would: the same link, digest and tree. Events another
// process appended are walked, with this process's after them, and from there on its own commits
// are carried over again.
func TestFollowCarriesOverThisProcessCommits(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.SealAsServeDoes(t, st)
		mem := st.RememberCommits()
		f, err := st.FollowAuditChain(ctx, testdb.Ring(t), nil, mem) // on the empty trail
		if err != nil {
			t.Fatal(err)
		}
		auditEvents(t, st, 0, 3)
		next := func(want int64) {
			t.Helper()
			v, err := f.Next(ctx)
			if err != nil || v.Seq() != want {
				t.Fatalf("Next: seq %d, %v; want %d", v.Seq(), err, want)
			}
			walked := testdb.VerifyChain(t, st, "")
			root, err := tlog.TreeHash(want, st.AuditHashReader(ctx))
			if err != nil {
				t.Fatal(err)
			}
			size, got := v.Tree()
			if v.Head() != walked.Head.Hash || !bytes.Equal(v.Digest(), walked.Digest) || size != want || got != root {
				t.Fatalf("Next: head %s digest %x tree %d %v; a walk of the rows: head %s digest %x tree %d %v",
					v.Head(), v.Digest(), size, got, walked.Head.Hash, walked.Digest, want, root)
			}
		}
		next(3)
		read := auditlog.RowsRead(f)
		if read != 0 {
			t.Errorf("carrying over this process's first 3 events read %d rows", read)
		}
		auditEvents(t, st, 3, 40)
		recordConcurrently(t, st, 43, 30)
		next(73)
		if n := auditlog.RowsRead(f); n != read {
			t.Errorf("carrying over this process's 70 events read %d rows", n-read)
		}
		auditEvents(t, testdb.OpenURL(t, testdb.URLOf(t, st)), 73, 2) // another process: seq 74, 75
		auditEvents(t, st, 75, 2)
		next(77)
		if n := auditlog.RowsRead(f) - read; n != 4 {
			t.Errorf("after another process appended, the walk read %d rows, want its 2 and the 2 after them", n)
		}
		read = auditlog.RowsRead(f)
		recordConcurrently(t, st, 77, 20)
		next(97)
		if n := auditlog.RowsRead(f); n != read {
			t.Errorf("carrying over this process's events after the walk read %d rows", n-read)
		}
	})
}

// A tree row this process wrote, changed before the signer carried its walk over it, is a break:
// the signer compares the tree's right edge it carried with the database's.
func TestFollowComparesTheTreeItCarried(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.SealAsServeDoes(t, st)
		mem := st.RememberCommits()
		auditEvents(t, st, 0, 3)
		f, err := st.FollowAuditChain(ctx, testdb.Ring(t), nil, mem)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Next(ctx); err != nil {
			t.Fatal(err)
		}
		auditEvents(t, st, 3, 6) // 9 events: the newest leaf is a subtree of the tree's edge
		sqlExec(t, st, fmt.Sprintf(`UPDATE audit_tree SET hash = %s WHERE id = %d`, blob(st, strings.Repeat("00", 32)), tlog.StoredHashIndex(0, 8)))
		var b *auditlog.ChainBreak
		if _, err := f.Next(ctx); !errors.As(err, &b) || b.Seq != 9 || !strings.Contains(b.Error(), "not the one this process wrote") {
			t.Fatalf("Next: %v; want a break at seq 9 naming the tree's row", err)
		}
	})
}

// A tree row on the right edge at the head the signer verified, altered before this process
// appends (a transaction that reads the edge from the database), grows the run from another tree:
// the signer does not carry its head over that run, and its walk of the rows breaks, where it
// would otherwise have signed a root the attacker chose.
func TestFollowRefusesARunGrownFromAnAlteredEdge(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.SealAsServeDoes(t, st)
		seed(t, st, testdb.Ring(t, "k1"), 0)
		auditEvents(t, st, 0, 3)
		f, v := followFromHere(t, st)
		edge := tlog.StoredHashIndex(0, v.Seq()-1) // the newest leaf is on every right edge
		sqlExec(t, st, fmt.Sprintf(`UPDATE audit_tree SET hash = %s WHERE id = %d`, blob(st, strings.Repeat("11", 32)), edge))
		key, prefix := secrets.NewAPIKey()
		id := domain.NewID()
		k := store.NewAPIKey{ID: id, UserID: staffID, Name: "ci", Prefix: prefix, Hash: secrets.HashCredential(domain.CredentialAPIKey, key), CreatedAt: time.Now().UTC()}
		if err := st.CreateAPIKey(ctx, k, event("api_key.create", id)); err != nil {
			t.Fatal(err)
		}
		var b *auditlog.ChainBreak
		if got, err := f.Next(ctx); !errors.As(err, &b) {
			size, root := got.Tree()
			t.Fatalf("Next: seq %d, tree %d %v, %v; want a break", got.Seq(), size, root, err)
		}
	})
}

// followFromHere starts a signer's follower, with its memory of this process's commits, on the
// trail as it is, and walks it once.
func followFromHere(t *testing.T, st *store.Store) (*auditlog.Follower, auditlog.Verified) {
	t.Helper()
	f, err := st.FollowAuditChain(ctx, testdb.Ring(t), nil, st.RememberCommits())
	if err != nil {
		t.Fatal(err)
	}
	v, err := f.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return f, v
}
