package auditlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/sqltx"
)

// auditStore is a migrated SQLite database in a folder of the test's and its trail, with a chain
// signer: the audit writer's, as the service has it.
func auditStore(t *testing.T) (*testLog, *secrets.Ring) {
	t.Helper()
	d := openTestDB(t, "audit.db")
	st := &testLog{Log: New(d.DB, d.engine), sql: d.db}
	t.Cleanup(st.Close)
	ring, err := secrets.NewRing(secrets.Key{ID: "k1", Bytes: make([]byte, secrets.KeySize)})
	if err != nil {
		t.Fatal(err)
	}
	st.SetChainSigner(ring)
	return st, ring
}

// testLog is a trail on a test database, and that database's pool.
type testLog struct {
	*Log
	sql *sql.DB
}

// A group of any size up to the limit is written whole, each event's fields in its own row,
// whatever mix of multi-row statements carries it.
func TestAppendAuditGroupSizes(t *testing.T) {
	ctx := context.Background()
	st, ring := auditStore(t)
	at := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	written := 0
	for _, n := range []int{1, 2, 3, 11, 64, 127, maxAuditGroup} {
		group := make([]domain.AuditEvent, n)
		for i := range group {
			group[i] = domain.AuditEvent{At: at.Add(time.Duration(written+i) * time.Second), ActorUserID: domain.SystemActorID,
				Action: "principal.decrypt", TargetID: fmt.Sprint(written + i), Outcome: domain.OutcomeGranted, Detail: fmt.Sprint("d", written+i)}
		}
		chain := st.chain()
		if err := st.db.Tx(ctx, func(q *sqltx.Tx) error { return chain.Append(ctx, q, group) }); err != nil {
			t.Fatalf("group of %d: %v", n, err)
		}
		written += n
	}
	rows, err := st.sql.QueryContext(ctx, `SELECT at, target_id, detail FROM audit_events`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[string]bool{}
	for rows.Next() {
		var micros int64
		var target, detail string
		if err := rows.Scan(&micros, &target, &detail); err != nil {
			t.Fatal(err)
		}
		var i int
		fmt.Sscan(target, &i)
		if detail != fmt.Sprint("d", i) || micros != at.Add(time.Duration(i)*time.Second).UnixMicro() {
			t.Errorf("event %s: detail %q, at %d; fields of another event", target, detail, micros)
		}
		seen[target] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != written {
		t.Fatalf("%d events stored, want %d", len(seen), written)
	}
	rep, err := st.VerifyAuditChain(ctx, ring, nil)
	if err != nil || rep.Break != nil || rep.Events != int64(written) {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

// A group lingers for company only while it is smaller than the last group, once, and not when
// full: a lone caller (the last group held one event) is committed at once, and so is a group
// that already holds as many events as the last.
func TestAuditGroupLingersOnlyForExpectedCompany(t *testing.T) {
	for _, c := range []struct {
		name  string
		last  int
		wait  groupWait
		group int
		want  bool
	}{
		{"first group ever", 0, mayLinger, 1, false},
		{"after a lone event", 1, mayLinger, 1, false},
		{"after a lone event, others waiting already", 1, mayLinger, 5, false},
		{"after a group of two", 2, mayLinger, 1, true},
		{"after a group of two, two here", 2, mayLinger, 2, false},
		{"after a group of nine, three here", 9, mayLinger, 3, true},
		{"lingering already", 9, lingering, 3, false},
		{"lingered", 9, due, 3, false},
		{"full", maxAuditGroup + 1, mayLinger, maxAuditGroup, false},
	} {
		turn := &writerTurn{last: c.last, wait: c.wait, group: make([]auditReq, c.group)}
		if got := turn.shouldLinger(); got != c.want {
			t.Errorf("%s: shouldLinger = %v, want %v", c.name, got, c.want)
		}
	}
}

// A group waits for company at most as long as the last commit took, and never more than
// maxAuditLinger: a fast disk keeps the wait short, a stalled one does not stretch it.
func TestAuditGroupLingersAtMostOneCommit(t *testing.T) {
	for _, c := range []struct {
		took, want time.Duration
	}{
		{0, 0},
		{300 * time.Microsecond, 300 * time.Microsecond},
		{maxAuditLinger, maxAuditLinger},
		{50 * time.Millisecond, maxAuditLinger},
	} {
		turn := &writerTurn{last: 9, took: c.took}
		if got := turn.lingerFor(); got != c.want {
			t.Errorf("last commit took %v: lingerFor = %v, want %v", c.took, got, c.want)
		}
	}
}

// A commit records how long writing its group took, which the next group's wait is bound to, and
// answers every caller of the group.
func TestAuditCommitRecordsItsTime(t *testing.T) {
	st, _ := auditStore(t)
	w := &auditWriter{}
	event := domain.AuditEvent{At: time.Now(), ActorUserID: domain.SystemActorID, Action: "principal.decrypt",
		TargetID: "p", Outcome: domain.OutcomeGranted}
	turn := &writerTurn{}
	for range 3 {
		turn.group = append(turn.group, auditReq{event: event, errc: make(chan error, 1)})
	}
	answers := append([]auditReq(nil), turn.group...)
	w.commit(st.Log, turn)
	for i, r := range answers {
		if err := <-r.errc; err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
	}
	if turn.took <= 0 || turn.last != 3 || len(turn.group) != 0 {
		t.Fatalf("after a commit of 3: took %v, last %d, %d left in the group; want the write's time, 3, none", turn.took, turn.last, len(turn.group))
	}
}

// Callers ready to run together share one commit: the writer yields to them before it commits,
// so the first caller's event does not go alone while the others wait a whole commit behind it.
func TestAuditGroupTakesTheCallersReadyTogether(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one core, as the service is measured
	ctx := context.Background()
	st, _ := auditStore(t)
	// One event first, so that the writer is running and its statements are prepared.
	event := domain.AuditEvent{At: time.Now(), ActorUserID: domain.SystemActorID, Action: "principal.decrypt",
		TargetID: "p", Outcome: domain.OutcomeGranted}
	if err := st.RecordAudit(ctx, event); err != nil {
		t.Fatal(err)
	}
	// Every commit appends its group under the active key, which it asks the signer for once.
	commits := &countingSigner{ChainSigner: st.chainSigner()}
	st.SetChainSigner(commits)

	const callers = 16
	readyTogether(callers, func() {
		if err := st.RecordAudit(ctx, event); err != nil {
			t.Error(err)
		}
	})
	// One commit, or two when the first caller's event went ahead; never one each.
	if n := commits.groups.Load(); n > callers/4 {
		t.Errorf("%d callers ready together took %d commits; want them to share", callers, n)
	}
}

// countingSigner counts the groups the audit writer commits: each asks for the active key once.
type countingSigner struct {
	ChainSigner
	groups atomic.Int64
}

func (c *countingSigner) ActiveKeyID() string {
	c.groups.Add(1)
	return c.ChainSigner.ActiveKeyID()
}

// Each group written is told to the observer: its events, and whether it committed.
func TestAuditGroupsObserved(t *testing.T) {
	ctx := context.Background()
	st, _ := auditStore(t)
	var seen groupsSeen
	st.ObserveGroups(&seen)
	event := domain.AuditEvent{At: time.Now(), ActorUserID: domain.SystemActorID, Action: "principal.decrypt",
		TargetID: "p", Outcome: domain.OutcomeGranted}
	if err := st.RecordAudit(ctx, event); err != nil {
		t.Fatal(err)
	}
	st.SetChainSigner(nil) // the next group cannot be linked: it fails, nothing written
	if err := st.RecordAudit(ctx, event); !errors.Is(err, ErrNoChainSigner) {
		t.Fatalf("a group without a signer: %v", err)
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	if want := []string{"1 committed", "1 failed"}; !slices.Equal(seen.groups, want) {
		t.Fatalf("observed %q, want %q", seen.groups, want)
	}
	if seen.took <= 0 {
		t.Fatalf("observed write time %v", seen.took)
	}
}

// groupsSeen is a GroupObserver that keeps what it was told.
type groupsSeen struct {
	mu     sync.Mutex
	groups []string
	took   time.Duration
}

func (g *groupsSeen) ObserveAuditGroup(events int, took time.Duration, committed bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	outcome := "committed"
	if !committed {
		outcome = "failed"
	}
	g.groups = append(g.groups, fmt.Sprint(events, " ", outcome))
	g.took += took
}
