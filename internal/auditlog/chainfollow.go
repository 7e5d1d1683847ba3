package auditlog

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/pause"
	"backoffice/internal/sqltx"

	"golang.org/x/mod/sumdb/tlog"
)

// followPage is how many events a follower reads and checks at a time, and followRest how long
// it rests after each full page. The follower shares the server's cores with the requests, and
// Go's scheduler lets a goroutine that keeps computing run for a whole time slice before a ready
// request gets its next turn: walking a busy minute's events in one stretch, it made every request
// of that stretch wait a slice at each of its turns (a decrypt has several: its read, the audit
// writer, the writer's return from the sync, its answer). In short pages with a rest after each, a
// request waits at most one page's work, and the follower still checks events many times faster
// than decrypts write them (docs/performance.md, what limits decrypt).
const (
	followPage = 100
	followRest = time.Millisecond
)

// Follower follows the audit trail as it grows, for the checkpoint signer: one walk of the
// chain (ChainWalk), from the genesis or from a checkpoint the signer trusts, carried on over the
// events written since, so that every checkpoint covers only what was verified link by link just
// before it. Once the walk breaks it stays broken: a rewritten or shortened trail is never
// signed, also after it looks whole again.
type Follower struct {
	s *Log
	*followState
	// restAfterPage rests after each full page a walk read: pause.For, unless a test's follower
	// counts or skips the rests (export_test.go).
	restAfterPage func(ctx context.Context, d time.Duration) error
}

// followState is the walk a Follower carries on, apart from the log: what its snapshots' bodies
// hold (a body holds no way to the pool, docs/architecture.md "Transactions").
type followState struct {
	ver ChainVerifier
	w   *ChainWalk
	// mem is what this process committed (nil: nothing is checked against it); unsettled the rows
	// walked at a seq whose commit it had not yet answered, checked once it has.
	mem       *CommitMemory
	unsettled []unsettledRow
	// memories are the log's, which a walk that broke takes mem from (stopMemory).
	memories *commitMemories
	// read counts the rows its walks read by seq.
	read int64
	// carried: the walk was carried over runs of this process (its head's tree edge is the
	// writer's, which Next compares with the database's).
	carried bool
}

// newFollower is a follower of s's trail under ver's keys, checked against mem (may be nil),
// resting with rest after each full page.
func newFollower(s *Log, ver ChainVerifier, mem *CommitMemory, rest func(context.Context, time.Duration) error) *Follower {
	return &Follower{s: s, followState: &followState{ver: ver, mem: mem, memories: &s.memories}, restAfterPage: rest}
}

// unsettledRow is a row a walk met at a seq the memory held as still being committed.
type unsettledRow struct {
	seq  int64
	id   domain.ID
	hash string
}

// settleWait bounds how long a walk waits for the commits it met to be answered: a commit's answer
// comes as soon as the database's does, and a writer waits for a lock at most its busy timeout.
const settleWait = 15 * time.Second

// FollowAuditChain starts following the trail under ver's keys: from base (a checkpoint signed
// under a key of the ring; its event must still be in the trail with its link), or, with base
// nil, from the genesis, with a walk of the whole trail: by seq in pages with a rest after each,
// as Next walks (a whole trail read in one stretch holds the server's core, and every request
// meanwhile waits behind it), then the rows without a seq, which no
// page by seq meets: they are breaks too. With mem (RememberCommits), every event this process
// committed must be met as it was written (see CommitMemory).
func (s *Log) FollowAuditChain(ctx context.Context, ver ChainVerifier, base *ChainExpect, mem *CommitMemory) (*Follower, error) {
	return s.follow(ctx, newFollower(s, ver, mem, pause.For), base)
}

// follow starts f following the trail from base (see FollowAuditChain).
func (s *Log) follow(ctx context.Context, f *Follower, base *ChainExpect) (*Follower, error) {
	ver := f.ver
	if base != nil {
		// A checkpoint whose event the retention policy pruned since: the walk starts from the
		// prune (checked against the ring), whose tree the checkpoint's extends.
		row, found, err := readPrune(ctx, s.db)
		if err != nil {
			return nil, fmt.Errorf("store: follow audit chain: %w", err)
		}
		if found && base.Seq < row.below {
			base = nil
		}
	}
	if base == nil || base.Root == nil {
		// A checkpoint that signed no tree vouches for none: the walk checks the whole trail, the
		// tree with it, and meets the checkpoint on its way.
		var expects []ChainExpect
		if base != nil {
			expects = []ChainExpect{*base}
		}
		if err := f.fromGenesis(ctx, expects); err != nil {
			return nil, err
		}
		f.learn()
		return f, nil
	}
	fs := f.followState
	err := s.db.Snapshot(ctx, func(q *sqltx.Tx) error {
		g, err := readGenesis(ctx, q)
		if err != nil {
			return err
		}
		row, found, err := auditRowAt(ctx, q, base.Seq)
		if err != nil {
			return err
		}
		fs.w = resumeChainWalk(ver, g, *base, row.e)
		if found {
			// The tree up to the checkpoint is taken as the database holds it: its edge is what
			// the walk's check of the events after it grows from.
			edge, err := readTreeEdge(ctx, q, base.Seq)
			if err != nil {
				return err
			}
			fs.w.tree = newTreeCheck(ver, base.Seq, edge)
			// The tree up to the checkpoint is taken from the database only as the root it signed.
			if root, err := tlog.TreeHash(base.Seq, mapReader(edge)); err != nil || !bytes.Equal(root[:], base.Root) {
				fs.w.rep.Break = &ChainBreak{Seq: base.Seq, ID: row.e.ID,
					Reason: fmt.Sprintf("the audit tree up to the event %s covers (seq %d) is not the one it signed: its rows were altered", base.What, base.Seq)}
				return nil
			}
		}
		if !found || row.e.Hash != hexHash(base.Link) {
			fs.w.rep.Break = &ChainBreak{Seq: base.Seq, ID: row.e.ID,
				Reason: fmt.Sprintf("the trail no longer holds the event %s covers (seq %d with link %s): its tail was cut off or rewritten", base.What, base.Seq, orNone(hexHash(base.Link)))}
			return nil
		}
		// The rows without a seq, which no walk by seq meets, as a walk from the genesis reads them.
		return auditRowsAfter(ctx, q, `WHERE seq IS NULL`, nil, fs.w.stepRow)
	})
	if err != nil {
		return nil, fmt.Errorf("store: follow audit chain: %w", err)
	}
	f.learn()
	return f, nil
}

// PrunedBelow is the seq the trail was pruned below when the walk started from its prune (0: it
// did not).
func (f *Follower) PrunedBelow() int64 { return f.w.rep.PrunedBelow }

// learn tells the memory the head the walk starts from, which the runs this process commits from
// there carry on from.
func (f *Follower) learn() {
	if f.mem != nil && f.w.rep.Break == nil && f.w.tree != nil && f.w.tree.short == 0 {
		f.mem.learn(f.w.point())
	}
}

// fromGenesis walks the whole trail from its genesis: the numbered events in pages, then the rows
// without a seq (last, where a walk of the whole trail in one read meets them).
func (f *Follower) fromGenesis(ctx context.Context, expects []ChainExpect) error {
	fs := f.followState
	err := f.s.db.Snapshot(ctx, func(q *sqltx.Tx) error {
		w, err := startWalk(ctx, q, fs.ver, expects)
		fs.w = w
		if err != nil {
			return err
		}
		return w.prunedRowsLeft(ctx, q)
	})
	if err != nil {
		return fmt.Errorf("store: follow audit chain: %w", err)
	}
	if err := f.walkOn(ctx); err != nil {
		return err
	}
	err = f.s.db.Snapshot(ctx, func(q *sqltx.Tx) error {
		return auditRowsAfter(ctx, q, `WHERE seq IS NULL`, nil, fs.w.stepRow)
	})
	if err != nil {
		return fmt.Errorf("store: follow audit chain: %w", err)
	}
	return nil
}

// Next carries the verified trail on to its newest event and returns it, or why it cannot: a
// break (kept), links under a key the ring lacks, a genesis that no longer holds, or a database
// error (the next call tries again). It first carries the walk over the runs this process
// committed since (CommitMemory), one after another, without reading them: the appender read
// each back in its own transaction. Then, in one snapshot, it checks that the genesis still
// holds, that the trail still holds the head it reached with its link, and that the tree's right
// edge there is the one this process wrote, and reads the trail's head: only where that is
// beyond the head reached (another process appended) does it walk the rows from there, a page at
// a time, as a walk from a checkpoint does. So a checkpoint of what this process alone wrote
// costs the same however many events it covers.
func (f *Follower) Next(ctx context.Context) (Verified, error) {
	if b := f.w.rep.Break; b != nil {
		f.stopMemory()
		return Verified{}, b
	}
	var before uint64 // what this process had committed before this walk's reads
	if f.mem != nil {
		before = f.mem.committedNow()
		if err := f.carryOn(); err != nil {
			return Verified{}, err
		}
	}
	var head int64
	fs := f.followState
	err := f.s.db.Snapshot(ctx, func(q *sqltx.Tx) error {
		g, err := readGenesis(ctx, q)
		if err != nil {
			return err
		}
		if verdict, why := g.judge(fs.ver); verdict == genesisBroken {
			return &ChainBreak{Seq: 1, Reason: why}
		}
		if at := fs.w.genesis; at != nil && at.lastUnlinked != g.LastUnlinked {
			return &ChainBreak{Seq: 1, Reason: fmt.Sprintf("the genesis now names seq %d as the last event from before the chain, and named seq %d: altered", g.LastUnlinked, at.lastUnlinked)}
		}
		if err := fs.stillExtends(ctx, q); err != nil {
			return err
		}
		head, err = chainHeadSeq(ctx, q)
		return err
	})
	if err != nil {
		return Verified{}, err
	}
	walk := head > f.w.rep.Events && (f.mem == nil || !f.mem.awaits(f.w.point()))
	if walk {
		if err := f.walkOn(ctx); err != nil {
			return Verified{}, err
		}
	}
	if walk || len(f.unsettled) > 0 {
		if err := f.checkMemory(ctx, before); err != nil {
			return Verified{}, err
		}
	}
	return f.w.Finish().Verified()
}

// carryOn carries the walk over the runs this process committed from its head on, as far as
// they go one after another, and forgets them.
func (f *Follower) carryOn() error {
	r, err := f.mem.carryOn(f.w.point())
	var b *ChainBreak
	switch {
	case errors.As(err, &b):
		return f.memoryBreak(b.Seq, b.ID, b.Reason)
	case err != nil:
		return err
	case r != nil && f.w.carryOver(r):
		f.carried = true
		f.mem.passed(f.w.point())
	}
	return nil
}

// point is the head the walk verified, with the tree's root and the trail's digest there (no
// root while the walk's tree is not at its head).
func (w *ChainWalk) point() commitPoint {
	p := commitPoint{seq: w.rep.Events, id: w.rep.Head.ID, link: w.prev, digest: w.rep.Digest}
	if t := w.tree; t != nil && t.short == 0 && len(t.pending) == 0 && t.n == w.rep.Events {
		p.root, p.rooted = treeRoot(t.n, t.edge)
	}
	return p
}

// carryOver moves the walk's head over r, a run this process committed from that head, as a walk
// of its rows would have: false (nothing moved) when the walk is not where r starts, or waits on
// something a walk of the rows must meet (an expectation, links it could not check, the tree not
// built).
func (w *ChainWalk) carryOver(r *commitRun) bool {
	t := w.tree
	switch {
	case w.rep.Break != nil || w.ver == nil || t == nil || t.short != 0 || len(t.pending) > 0 || t.n != w.rep.Events:
		return false
	case len(w.heads) > 0 || len(w.unheld) > 0 || !r.from.same(w.point()) || !bytes.Equal(r.from.digest, w.rep.Digest):
		return false
	}
	for seq := range w.expects {
		if seq > w.rep.Events {
			return false
		}
	}
	if w.firstLink == 0 && !w.begun {
		w.firstLink = r.from.seq + 1
	}
	w.checked = true
	w.rep.Events, w.rep.Digest = r.to.seq, r.to.digest
	w.rep.Head = domain.AuditEvent{Seq: r.to.seq, ID: r.to.id, Hash: hexHash(r.to.link)}
	w.prev = r.to.link
	t.n, t.edge = r.to.seq, r.edge
	return true
}

// checkMemory ends a walk's check of this process's commits (see CommitMemory): the rows it met
// while their commits were being answered are checked once they are, an event committed before
// the walk began that the walk did not reach is missing, and the runs it checked are forgotten.
// A failure is a break, and kept: the memory stops.
func (f *Follower) checkMemory(ctx context.Context, before uint64) error {
	if f.mem == nil || f.w.rep.Break != nil {
		f.stopMemory()
		return nil
	}
	deadline := time.Now().Add(settleWait)
	for len(f.unsettled) > 0 {
		r := f.unsettled[0]
		switch f.mem.check(r.seq, r.hash) {
		case pendingCommit:
			if time.Now().After(deadline) {
				return fmt.Errorf("store: follow audit chain: seq %d: this process has not yet answered for the audit event it is committing there; the next walk checks it", r.seq)
			}
			if err := pause.For(ctx, followRest); err != nil {
				return err
			}
			continue
		case otherThanCommitted:
			return f.memoryBreak(r.seq, r.id, "this process committed another audit event at this seq and answered for it: it was removed and the gap closed by a later append")
		}
		f.unsettled = f.unsettled[1:]
	}
	walked := f.w.rep.Events
	if seq, why := f.mem.missing(walked, before); seq != 0 {
		return f.memoryBreak(seq, "", why)
	}
	f.learn()
	return nil
}

// rememberRow checks a row the walk met against the memory: false (a break) when this process
// committed another event at its seq.
func (f *followState) rememberRow(r auditRow) bool {
	if f.mem == nil || !r.numbered {
		return true
	}
	switch f.mem.check(r.e.Seq, r.e.Hash) {
	case otherThanCommitted:
		f.w.rep.Break = &ChainBreak{Seq: r.e.Seq, ID: r.e.ID,
			Reason: "this process committed another audit event at this seq and answered for it: it was removed and the gap closed by a later append"}
		return false
	case pendingCommit:
		f.unsettled = append(f.unsettled, unsettledRow{seq: r.e.Seq, id: r.e.ID, hash: r.e.Hash})
	}
	return true
}

// memoryBreak keeps a break the memory showed, and stops it.
func (f *followState) memoryBreak(seq int64, id domain.ID, why string) error {
	f.w.rep.Break = &ChainBreak{Seq: seq, ID: id, Reason: why}
	f.stopMemory()
	return f.w.rep.Break
}

// stopMemory ends the memory of a walk that broke: nothing it could check is signed again.
func (f *followState) stopMemory() {
	if f.mem != nil && f.w.rep.Break != nil {
		f.memories.stop(f.mem)
	}
}

// walkOn walks the events after the last one walked, followPage at a time, each page in a
// snapshot of its own, resting followRest after each full page, until a page comes back short or
// the walk breaks.
func (f *Follower) walkOn(ctx context.Context) error {
	for {
		walked := f.w.rep.Events
		read := 0
		fs := f.followState
		err := f.s.db.Snapshot(ctx, func(q *sqltx.Tx) error {
			err := auditRowsAfter(ctx, q, `WHERE seq > ? ORDER BY seq LIMIT ?`, []any{walked, followPage}, func(r auditRow) bool {
				read++
				fs.read++
				return fs.w.stepRow(r) && fs.rememberRow(r)
			})
			if err != nil {
				return err
			}
			return fs.w.checkTree(ctx, q)
		})
		if err != nil {
			return fmt.Errorf("store: follow audit chain: %w", err)
		}
		if f.w.rep.Break != nil || read < followPage {
			return nil
		}
		if err := f.restAfterPage(ctx, followRest); err != nil {
			return err
		}
	}
}

// stillExtends checks that the newest event walked is still in the trail as it was: a tail cut
// off under the walk, and written again, is a break even where the new events link.
func (f *followState) stillExtends(ctx context.Context, q *sqltx.Tx) error {
	head := f.w.rep.Head
	if head.Seq == 0 {
		return nil
	}
	row, found, err := auditRowAt(ctx, q, head.Seq)
	if err != nil {
		return err
	}
	if !found && f.carried {
		f.w.rep.Break = &ChainBreak{Seq: head.Seq, ID: head.ID,
			Reason: "this process committed an audit event at this seq and answered for it, and the trail ends before it: it was deleted"}
		return f.w.rep.Break
	}
	if !found || row.e.ID != head.ID || row.e.Hash != head.Hash {
		f.w.rep.Break = &ChainBreak{Seq: head.Seq, ID: head.ID,
			Reason: fmt.Sprintf("the trail no longer holds this event as it was verified (link %s): its tail was cut off or rewritten since", orNone(head.Hash))}
		return f.w.rep.Break
	}
	if !f.carried {
		return nil
	}
	edge, err := readTreeEdge(ctx, q, head.Seq)
	if err != nil {
		return err
	}
	for x, h := range f.w.tree.edge {
		if edge[x] != h {
			f.w.rep.Break = &ChainBreak{Seq: head.Seq, ID: head.ID,
				Reason: fmt.Sprintf("the audit tree's stored hash %d is not the one this process wrote with the events up to this one: its rows were altered", x)}
			return f.w.rep.Break
		}
	}
	f.carried = false
	return nil
}

// chainHeadSeq is the seq of the trail's newest event (0 for none).
func chainHeadSeq(ctx context.Context, q *sqltx.Tx) (int64, error) {
	var seq sql.NullInt64
	if err := q.QueryRow(ctx, `SELECT max(seq) FROM audit_events`).Scan(&seq); err != nil {
		return 0, err
	}
	return seq.Int64, nil
}

// auditRowAt reads the event at seq, as walks read it.
func auditRowAt(ctx context.Context, q *sqltx.Tx, seq int64) (row auditRow, found bool, err error) {
	err = auditRowsAfter(ctx, q, `WHERE seq = ?`, []any{seq}, func(r auditRow) bool {
		row, found = r, true
		return false
	})
	return row, found, err
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
