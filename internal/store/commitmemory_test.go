package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
	"golang.org/x/mod/sumdb/tlog"
)

// The checkpoint signer's walk checks the trail against what this process committed
// (store.CommitMemory): an event deleted after it was answered for, with the gap closed by the
// next append or not, and a memory that overflowed, are breaks naming the seq, and stay.
func TestFollowChecksThisProcessCommits(t *testing.T) {
	for _, c := range []struct {
		name  string
		limit int
		// attack runs after the trail's 3 events and the memory's first walk; then 2 more events
		// are written.
		attack string
		seq    int64
		says   string
	}{
		{name: "the newest deleted, the gap closed by the next append", attack: `DELETE FROM audit_events WHERE seq = 5`, seq: 5,
			says: "committed another audit event at this seq"},
		{name: "the newest deleted", attack: `DELETE FROM audit_events WHERE seq = 5`, seq: 5,
			says: "the trail ends before it"},
		{name: "more events than the memory keeps", limit: 1, seq: 5,
			says: "remembers none from here on"},
	} {
		t.Run(c.name, func(t *testing.T) {
			testdb.ForEach(t, func(t *testing.T, st *store.Store) {
				sealAsServeDoes(t, st)
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
					store.LimitMemory(mem, c.limit)
				}
				auditEvents(t, st, 3, 2) // seq 4 and 5
				if c.attack != "" {
					sqlExec(t, st, c.attack)
				}
				if strings.Contains(c.name, "closed") {
					// The tree's rows of seq 5 go too, or the writer would not append.
					sqlExec(t, st, fmt.Sprintf(`DELETE FROM audit_tree WHERE id >= %d`, tlog.StoredHashCount(4)))
					auditEvents(t, st, 5, 1) // numbered 5 again, linked after 4
				}
				for range 2 {
					var b *store.ChainBreak
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
		sealAsServeDoes(t, st)
		seed(t, st, testdb.Ring(t, "k1"), 0)
		mem := st.RememberCommits()
		f, err := st.FollowAuditChain(ctx, testdb.Ring(t), nil, mem)
		if err != nil {
			t.Fatal(err)
		}
		v, err := f.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
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
		var b *store.ChainBreak
		if _, err := f.Next(ctx); !errors.As(err, &b) || b.Seq != created || !strings.Contains(b.Error(), "committed another audit event at this seq") {
			t.Fatalf("Next: %v; want a break at seq %d", err, created)
		}
	})
}
