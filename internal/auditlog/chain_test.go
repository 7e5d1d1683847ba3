package auditlog_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"backoffice/internal/auditlog"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// auditEvents records n events one after another (each its own group), the i-th at second i.
func auditEvents(t *testing.T, st *store.Store, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		err := st.RecordAudit(ctx, domain.AuditEvent{At: fixtureNow.Add(time.Duration(i) * time.Second), ActorUserID: staffUser,
			Action: "principal.decrypt", TargetID: principalA.String(), Outcome: domain.OutcomeGranted, Detail: fmt.Sprint("field ssn ", i)})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func wantBreak(t *testing.T, rep auditlog.ChainReport, seq int64, reason string) {
	t.Helper()
	if rep.Break == nil {
		t.Fatalf("tampering not caught: %+v", rep)
	}
	if rep.Break.Seq != seq || !strings.Contains(rep.Break.Error(), reason) {
		t.Fatalf("break %q, want at seq %d saying %q", rep.Break.Error(), seq, reason)
	}
}

// sqlExec changes the database behind the store's back, as someone with database access would.
func sqlExec(t *testing.T, st *store.Store, query string) {
	t.Helper()
	if _, err := testdb.SQLOf(t, st).ExecContext(ctx, query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// blob is a byte-string literal in the engine's SQL.
func blob(st *store.Store, hexText string) string {
	if st.Engine() == "postgres" {
		return `'\x` + hexText + `'::bytea`
	}
	return `X'` + hexText + `'`
}

func TestAuditChainIntact(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.WantIntact(t, testdb.VerifyChain(t, st, ""), 0)
		auditEvents(t, st, 0, 5)
		rep := testdb.VerifyChain(t, st, "")
		testdb.WantIntact(t, rep, 5)
		if rep.Legacy != 0 || rep.Head.TargetID != principalA.String() || rep.Head.Detail != "field ssn 4" {
			t.Fatalf("head %+v, legacy %d", rep.Head, rep.Legacy)
		}
		// The head recorded now is still in the chain after it grows.
		auditEvents(t, st, 5, 2)
		testdb.WantIntact(t, testdb.VerifyChain(t, st, rep.Head.Hash), 7)
	})
}

func TestAuditChainCatchesAlteredRow(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		auditEvents(t, st, 0, 5)
		for _, change := range []string{
			`detail = 'field none'`,
			`actor_user_id = '` + userA.String() + `'`,
			`outcome = 'denied'`,
			`at = at + 1`,
			`chain_key_id = 'kother'`,
		} {
			t.Run(change, func(t *testing.T) {
				sqlExec(t, st, `UPDATE audit_events SET `+change+` WHERE seq = 3`)
				wantBreak(t, testdb.VerifyChain(t, st, ""), 3, "")
			})
		}
	})
}

func TestAuditChainCatchesRemovedRow(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		auditEvents(t, st, 0, 5)
		sqlExec(t, st, `DELETE FROM audit_events WHERE seq = 3`)
		wantBreak(t, testdb.VerifyChain(t, st, ""), 3, "removed")
		// Closing the gap by renumbering does not help: the next link no longer follows.
		sqlExec(t, st, `UPDATE audit_events SET seq = seq - 1 WHERE seq > 3`)
		wantBreak(t, testdb.VerifyChain(t, st, ""), 3, "does not match")
	})
}

func TestAuditChainCatchesInsertedRow(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		auditEvents(t, st, 0, 3)
		good := testdb.VerifyChain(t, st, "")
		fake := strings.Repeat("ab", 32)
		insert := func(id domain.ID, seq int, keyID, hash string) {
			sqlExec(t, st, fmt.Sprintf(`INSERT INTO audit_events (id, at, actor_user_id, action, target_id, outcome, detail, seq, chain_key_id, hash)
				VALUES ('%s', 1, '%s', 'principal.decrypt', 'x', 'granted', '', %d, %s, %s)`, id, staffUser, seq, keyID, hash))
		}
		// At the end, with a made-up link.
		insert(id(9001), 4, "'"+testdb.DefaultKeyID+"'", blob(st, fake))
		wantBreak(t, testdb.VerifyChain(t, st, ""), 4, "does not match")
		// With the link of the event before it, copied.
		sqlExec(t, st, `DELETE FROM audit_events WHERE seq = 4`)
		insert(id(9001), 4, "'"+testdb.DefaultKeyID+"'", blob(st, good.Head.Hash))
		wantBreak(t, testdb.VerifyChain(t, st, ""), 4, "does not match")
		sqlExec(t, st, `DELETE FROM audit_events WHERE seq = 4`)
		testdb.WantIntact(t, testdb.VerifyChain(t, st, ""), 3)
		// In the middle, the later events moved up to make room.
		sqlExec(t, st, `UPDATE audit_events SET seq = seq + 10 WHERE seq >= 2`)
		sqlExec(t, st, `UPDATE audit_events SET seq = seq - 9 WHERE seq >= 12`)
		insert(id(9002), 2, "'"+testdb.DefaultKeyID+"'", blob(st, fake))
		wantBreak(t, testdb.VerifyChain(t, st, ""), 2, "does not match")
		// Without a link, posing as an event from before the chain.
		sqlExec(t, st, `DELETE FROM audit_events WHERE seq = 2`)
		insert(id(9003), 2, "NULL", "NULL")
		wantBreak(t, testdb.VerifyChain(t, st, ""), 2, "no link")
		// Without a number.
		sqlExec(t, st, `DELETE FROM audit_events WHERE seq = 2`)
		sqlExec(t, st, `UPDATE audit_events SET seq = seq - 1 WHERE seq > 2`)
		testdb.WantIntact(t, testdb.VerifyChain(t, st, ""), 3)
		sqlExec(t, st, fmt.Sprintf(`INSERT INTO audit_events (id, at, actor_user_id, action, target_id, outcome, detail)
			VALUES ('%s', 1, '%s', 'principal.decrypt', 'x', 'granted', '')`, id(9004), staffUser))
		if st.Engine() == "sqlite" {
			// seq is SQLite's rowid: a row given none is numbered next, and has no link.
			wantBreak(t, testdb.VerifyChain(t, st, ""), 4, "no link")
		} else {
			wantBreak(t, testdb.VerifyChain(t, st, ""), 4, "no sequence number")
		}
	})
}

func TestAuditChainCatchesCutTail(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		auditEvents(t, st, 0, 5)
		recorded := testdb.VerifyChain(t, st, "").Head.Hash
		sqlExec(t, st, `DELETE FROM audit_events WHERE seq >= 4`)
		// The tree still holds the cut events: the walk sees the cut, and nothing is appended
		// after it.
		wantBreak(t, testdb.VerifyChain(t, st, ""), 4, "audit tree holds leaves past the trail's end")
		if err := st.RecordAudit(ctx, domain.AuditEvent{At: fixtureNow, ActorUserID: staffUser, Action: "principal.decrypt", TargetID: "x", Outcome: "granted"}); !errors.Is(err, auditlog.ErrTree) {
			t.Fatalf("append after a cut tail: %v, want ErrAuditTree", err)
		}
		// Cut from the tree too (tlog.StoredHashCount(3) rows remain), the database alone cannot
		// tell a cut from a shorter trail; a head recorded elsewhere can.
		sqlExec(t, st, `DELETE FROM audit_tree WHERE id >= 4`)
		testdb.WantIntact(t, testdb.VerifyChain(t, st, ""), 3)
		wantBreak(t, testdb.VerifyChain(t, st, recorded), 4, "cut off")
		// New events after the cut make no difference to that.
		auditEvents(t, st, 5, 3)
		testdb.WantIntact(t, testdb.VerifyChain(t, st, ""), 6)
		wantBreak(t, testdb.VerifyChain(t, st, recorded), 7, "cut off")
	})
}

// Sealing the genesis under a new key reads the seal back: a trigger that swallows the update
// fails it, the seal left where it was, instead of reporting it moved (after which the old key
// would be let go).
func TestGenesisSealReadsBack(t *testing.T) {
	swallow := map[string]string{
		"sqlite":   `CREATE TRIGGER zz BEFORE UPDATE ON audit_chain_genesis BEGIN SELECT RAISE(IGNORE); END`,
		"postgres": `CREATE FUNCTION zz() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$; CREATE TRIGGER zz BEFORE UPDATE ON audit_chain_genesis FOR EACH ROW EXECUTE FUNCTION zz()`,
	}
	drop := map[string]string{"sqlite": `DROP TRIGGER zz`, "postgres": `DROP FUNCTION zz() CASCADE`}
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		auditEvents(t, st, 0, 2)
		both := testdb.Ring(t, "knew", testdb.DefaultKeyID)
		st.SetChainSigner(both)
		rep, err := st.VerifyAuditChain(ctx, both, nil)
		if err != nil {
			t.Fatal(err)
		}
		v, err := rep.Verified()
		if err != nil {
			t.Fatal(err)
		}
		sqlExec(t, st, swallow[st.Engine()])
		if sealed, err := st.SealAuditGenesis(ctx, v); !errors.Is(err, auditlog.ErrNotLanded) || sealed {
			t.Fatalf("seal swallowed by a trigger: sealed %v, %v; want ErrNotLanded", sealed, err)
		}
		sqlExec(t, st, drop[st.Engine()])
		var keyID string
		if err := testdb.SQLOf(t, st).QueryRowContext(ctx, `SELECT chain_key_id FROM audit_chain_genesis WHERE id = 1`).Scan(&keyID); err != nil || keyID != testdb.DefaultKeyID {
			t.Fatalf("after the refused seal the genesis names %q (%v), want %q", keyID, err, testdb.DefaultKeyID)
		}
		if sealed, err := st.SealAuditGenesis(ctx, v); err != nil || !sealed {
			t.Fatalf("seal without the trigger: sealed %v, %v", sealed, err)
		}
	})
}

// Links made before a rotation verify while their key is in the ring. Once it is not, they cannot
// be checked (neither intact nor broken) until an anchor under the new key covers them, and then
// altering one of them is still caught, by the anchor's digest.
func TestAuditChainAcrossKeyRotation(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		auditEvents(t, st, 0, 2)
		both, newOnly := testdb.Ring(t, "knew", testdb.DefaultKeyID), testdb.Ring(t, "knew")
		st.SetChainSigner(both)
		auditEvents(t, st, 2, 2)
		rep, err := st.VerifyAuditChain(ctx, both, nil)
		if err != nil {
			t.Fatal(err)
		}
		testdb.WantIntact(t, rep, 4)
		if rep.Head.ChainKeyID != "knew" {
			t.Fatalf("newest link under %q, want knew", rep.Head.ChainKeyID)
		}
		v, err := rep.Verified()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.SealAuditGenesis(ctx, v); err != nil { // as keys rewrap does
			t.Fatal(err)
		}
		rep, err = st.VerifyAuditChain(ctx, newOnly, nil)
		if err != nil || rep.Break != nil || rep.Unchecked == nil || rep.Unchecked.From != 1 || !strings.Contains(rep.Unchecked.Error(), `key "`+testdb.DefaultKeyID+`"`) {
			t.Fatalf("old key gone, no anchor: want cannot check from seq 1: %+v %v", rep, err)
		}
		if err := st.AnchorAudit(ctx, v, domain.AuditEvent{At: fixtureNow, ActorUserID: staffUser, Outcome: domain.OutcomeGranted}); err != nil {
			t.Fatal(err)
		}
		rep, err = st.VerifyAuditChain(ctx, newOnly, nil)
		if err != nil || rep.Break != nil || rep.Unchecked != nil || rep.Events != 5 {
			t.Fatalf("anchored: want intact with the new key alone: %+v %v", rep, err)
		}
		// Someone holding the old key rewrites a pre-rotation event and links it anew: the
		// anchor, made under the new key, no longer matches.
		forged := verifyEvents(t, st)[0]
		forged.Detail = "field none"
		link, err := auditlog.ChainLink(testdb.Ring(t, testdb.DefaultKeyID), nil, forged)
		if err != nil {
			t.Fatal(err)
		}
		sqlExec(t, st, fmt.Sprintf(`UPDATE audit_events SET detail = 'field none', hash = %s WHERE seq = 1`, blob(st, hex.EncodeToString(link))))
		rep, err = st.VerifyAuditChain(ctx, newOnly, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantBreak(t, rep, 1, "an event in seq 1-4 differs from what the anchor at seq 5")
	})
}

// verifyEvents lists the trail oldest first.
func verifyEvents(t *testing.T, st *store.Store) []domain.AuditEvent {
	t.Helper()
	list, _, err := st.ListAuditEvents(ctx, domain.AuditFilter{}, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(list)
	return list
}

// The attack of the issue: every link stripped, events removed, the rest renumbered, one altered
// and a forged decrypt appended. The genesis (the chain begins after seq 0) makes the first
// unlinked event a break; stripping links alone is one too.
func TestAuditChainCatchesStrippedLinks(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		auditEvents(t, st, 0, 8)
		sqlExec(t, st, `UPDATE audit_events SET hash = NULL, chain_key_id = NULL`)
		wantBreak(t, testdb.VerifyChain(t, st, ""), 1, "no link")
		sqlExec(t, st, `DELETE FROM audit_events WHERE seq <= 3`)
		sqlExec(t, st, `UPDATE audit_events SET seq = seq - 3`)
		sqlExec(t, st, `UPDATE audit_events SET actor_user_id = '`+userA.String()+`' WHERE seq = 2`)
		sqlExec(t, st, fmt.Sprintf(`INSERT INTO audit_events (id, at, actor_user_id, action, target_id, outcome, detail, seq)
			VALUES ('%s', 1, '%s', 'principal.decrypt', 'x', 'granted', 'field ssn', 6)`, id(9300), staffUser))
		wantBreak(t, testdb.VerifyChain(t, st, ""), 1, "no link")
		// A service writing on top of it (its tree made anew) does not make it whole.
		sqlExec(t, st, `DELETE FROM audit_tree`)
		if _, err := st.BuildAuditTree(ctx); err != nil {
			t.Fatal(err)
		}
		auditEvents(t, st, 10, 2)
		wantBreak(t, testdb.VerifyChain(t, st, ""), 1, "no link")
		// Nor does moving the genesis, or removing it: it is sealed, and always there.
		sqlExec(t, st, `UPDATE audit_chain_genesis SET last_unlinked_seq = 6`)
		wantBreak(t, testdb.VerifyChain(t, st, ""), 1, "genesis")
		sqlExec(t, st, `DELETE FROM audit_chain_genesis`)
		wantBreak(t, testdb.VerifyChain(t, st, ""), 1, "genesis record")
	})
}

// Writers of two processes (two stores on one database) appending at once make one chain.
func TestAuditChainFromTwoStores(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			url := testdb.URL(t, engine)
			var stores []*store.Store
			for range 2 {
				st, err := store.Open(ctx, url)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				if err := st.Migrate(ctx); err != nil {
					t.Fatal(err)
				}
				st.SetChainSigner(testdb.Ring(t))
				testdb.SealAsServeDoes(t, st)
				stores = append(stores, st)
			}
			const each = 100
			var wg sync.WaitGroup
			errs := make(chan error, 2*each)
			for i := range 2 * each {
				wg.Go(func() {
					errs <- stores[i%2].RecordAudit(context.Background(), domain.AuditEvent{At: fixtureNow, ActorUserID: staffUser,
						Action: "principal.decrypt", TargetID: fmt.Sprint(i), Outcome: domain.OutcomeGranted})
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			testdb.WantIntact(t, testdb.VerifyChain(t, stores[0], ""), 2*each)
		})
	}
}

// A store given no signer writes no event at all rather than one outside the chain.
func TestAuditNeedsSigner(t *testing.T) {
	st, err := store.Open(ctx, testdb.URL(t, "sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	err = st.RecordAudit(ctx, domain.AuditEvent{At: fixtureNow, ActorUserID: staffUser, Action: "x", TargetID: "y", Outcome: domain.OutcomeGranted})
	if err != auditlog.ErrNoChainSigner {
		t.Fatalf("RecordAudit without a signer: %v", err)
	}
}

// Any page number is answered like the SAM list's: a page past the end is empty, even one whose
// offset would overflow (PostgreSQL refused a negative OFFSET; SQLite read it as page 1).
func TestAuditListHugePage(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		auditEvents(t, st, 0, 3)
		for _, page := range []int64{4611686018427387905, math.MaxInt64} {
			list, total, err := st.ListAuditEvents(ctx, domain.AuditFilter{}, page, 2)
			if err != nil || total != 3 || len(list) != 0 {
				t.Fatalf("page %d: %d events of %d, %v; want none of 3", page, len(list), total, err)
			}
		}
	})
}

// The chain signer may be given again while the writer appends (a key ring read anew): each
// append takes one signer, whole, and every event is linked under a key of the ring. Run with
// -race, a setter that wrote the field the writer reads is a data race.
func TestSetChainSignerWhileAppending(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		testdb.SealAsServeDoes(t, st)
		ring := testdb.Ring(t)
		const writers, each = 4, 25
		var wg sync.WaitGroup
		errs := make(chan error, writers*each)
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					errs <- st.RecordAudit(ctx, domain.AuditEvent{At: fixtureNow, ActorUserID: staffUser,
						Action: "principal.decrypt", TargetID: fmt.Sprint(w, "-", i), Outcome: domain.OutcomeGranted})
				}
			})
		}
		for range writers * each {
			st.SetChainSigner(ring)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		rep, err := st.VerifyAuditChain(ctx, ring, nil)
		if err != nil || rep.Break != nil || rep.Events < writers*each {
			t.Fatalf("after appends beside the setter: %+v, %v; want an intact chain of at least %d events", rep, err, writers*each)
		}
	})
}
