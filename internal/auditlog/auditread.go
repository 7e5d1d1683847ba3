package auditlog

import (
	"context"
	"fmt"
	"strings"

	"backoffice/internal/column"
	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// where is the filter as SQL conditions and their arguments.
func auditWhere(f domain.AuditFilter) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, arg any) {
		conds = append(conds, cond)
		args = append(args, arg)
	}
	if f.ActorUserID != "" {
		add("actor_user_id = ?", string(f.ActorUserID))
	}
	if f.TargetID != "" {
		add("target_id = ?", f.TargetID)
	}
	if f.Action != "" {
		add("action = ?", f.Action)
	}
	if f.Outcome != "" {
		add("outcome = ?", f.Outcome)
	}
	if f.From != nil {
		add("at >= ?", column.Micros(*f.From))
	}
	if f.To != nil {
		add("at < ?", column.Micros(*f.To))
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// ListAuditEvents returns a page of the events the filter matches, newest (highest sequence
// number) first, and how many match. The page is read backwards along seq (the actor's or the
// target's index, which end in seq, or seq's own), so OFFSET passes over newer entries only. Without a filter the total is
// the newest sequence number (events are numbered from 1 without gaps), not a count of every row.
func (s *Log) ListAuditEvents(ctx context.Context, f domain.AuditFilter, page, size int64) ([]domain.AuditEvent, int64, error) {
	where, args := auditWhere(f)
	var total int64
	var events []domain.AuditEvent
	err := s.db.Snapshot(ctx, func(q *sqltx.Tx) error {
		count := `SELECT COUNT(*) FROM audit_events` + where
		if where == "" {
			count = `SELECT COALESCE(MAX(seq), 0) FROM audit_events`
		}
		if err := q.QueryRow(ctx, count, args...).Scan(&total); err != nil {
			return fmt.Errorf("store: count audit events: %w", noRows(err))
		}
		r, err := q.Query(ctx, auditSelect+where+` ORDER BY seq DESC LIMIT ? OFFSET ?`, append(args, size, sqltx.PageOffset(page, size))...)
		if err != nil {
			return fmt.Errorf("store: list audit events: %w", err)
		}
		defer r.Close()
		for r.Next() {
			e, err := scanAuditEvent(r)
			if err != nil {
				return fmt.Errorf("store: list audit events: %w", err)
			}
			events = append(events, e)
		}
		return r.Err()
	})
	if err != nil {
		return nil, 0, err
	}
	return events, total, nil
}

// VerifyAuditChain walks the whole trail in sequence order, in one snapshot, and checks that it
// is one unbroken chain (see ChainWalk) from its genesis on, under ver's keys. An altered row
// fails its own link, a removed one leaves a gap (or, renumbered, fails the next link), an
// inserted or stripped one fails its link or sits after the genesis unlinked. expects are what
// was kept outside the database (signed checkpoints, a recorded head): the chain must still hold
// each. That is what catches a cut-off tail, which the database alone cannot tell from a shorter
// trail. The report's Verified is what signs, seals and anchors accept.
func (s *Log) VerifyAuditChain(ctx context.Context, ver ChainVerifier, expects []ChainExpect) (ChainReport, error) {
	var rep ChainReport
	err := s.db.Snapshot(ctx, func(q *sqltx.Tx) error {
		var err error
		if rep, err = walkChain(ctx, q, ver, expects); err != nil {
			return fmt.Errorf("store: verify audit chain: %w", err)
		}
		return nil
	})
	return rep, err
}

// startWalk starts a walk of the whole trail in q from its genesis, or from its newest prune
// (resumeAtPrune), against the anchors and expects, keeping the digests at the seqs of keep.
func startWalk(ctx context.Context, q *sqltx.Tx, ver ChainVerifier, expects []ChainExpect, keep ...int64) (*ChainWalk, error) {
	g, err := readGenesis(ctx, q)
	if err != nil {
		return nil, err
	}
	anchors, err := readAnchors(ctx, q)
	if err != nil {
		return nil, err
	}
	anchored := make([]int64, len(anchors), len(anchors)+len(keep))
	for i, a := range anchors {
		anchored[i] = a.Covers
	}
	w := NewChainWalk(ver, &g, append(anchored, keep...), expects)
	w.tree = newTreeCheck(ver, 0, edgeHashes{})
	if w.rep.Break == nil {
		if err := w.resumeAtPrune(ctx, q, ver); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// walkPage is how many events a walk of the whole trail reads at a time, before it checks the
// audit tree rows they added.
const walkPage = 1000

// walkChain checks the whole trail in q from its genesis (or its newest prune), against the
// anchors and expects: by seq a page at a time, each page's tree rows after it, then the rows
// without a seq (breaks all), and that the tree holds nothing past the trail.
func walkChain(ctx context.Context, q *sqltx.Tx, ver ChainVerifier, expects []ChainExpect) (ChainReport, error) {
	w, err := walkChainKeeping(ctx, q, ver, expects)
	if err != nil {
		return ChainReport{}, err
	}
	return w.Finish(), nil
}

// walkChainKeeping is walkChain, keeping the digests at the seqs of keep, and returns the walk.
func walkChainKeeping(ctx context.Context, q *sqltx.Tx, ver ChainVerifier, expects []ChainExpect, keep ...int64) (*ChainWalk, error) {
	w, err := startWalk(ctx, q, ver, expects, keep...)
	if err != nil {
		return nil, err
	}
	// A row numbered below where the walk starts comes first in seq order, where no page after
	// the last seq walked meets it: it breaks the walk there.
	if err := auditRowsAfter(ctx, q, `WHERE seq < 1 ORDER BY seq`, nil, w.stepRow); err != nil {
		return nil, err
	}
	if err := w.prunedRowsLeft(ctx, q); err != nil {
		return nil, err
	}
	for w.rep.Break == nil && !w.stopped {
		read := 0
		err := auditRowsAfter(ctx, q, `WHERE seq > ? ORDER BY seq LIMIT ?`, []any{w.rep.Events, walkPage}, func(r auditRow) bool {
			read++
			return w.stepRow(r)
		})
		if err != nil {
			return nil, err
		}
		if err := w.checkTree(ctx, q); err != nil {
			return nil, err
		}
		if read < walkPage {
			break
		}
	}
	if err := auditRowsAfter(ctx, q, `WHERE seq IS NULL`, nil, w.stepRow); err != nil {
		return nil, err
	}
	if err := w.finishTree(ctx, q); err != nil {
		return nil, err
	}
	return w, nil
}

// auditRowsAfter reads the rows that tail (a WHERE, an ORDER BY, a LIMIT) selects, as walks read
// them, until fn returns false.
func auditRowsAfter(ctx context.Context, q *sqltx.Tx, tail string, args []any, fn func(auditRow) bool) error {
	r, err := q.Query(ctx, auditSelect+` `+tail, args...)
	if err != nil {
		return err
	}
	defer r.Close()
	for r.Next() {
		row, err := scanAuditWalkRow(r)
		if err != nil {
			return err
		}
		if !fn(row) {
			break
		}
	}
	return r.Err()
}

// readAnchors reads the trail's anchors as their rows say (links not checked): a walk keeps the
// digests at the seqs they name, and believes an anchor once its link holds. A row whose columns
// are not an anchor's is left to the walk to report.
func readAnchors(ctx context.Context, q *sqltx.Tx) ([]Anchor, error) {
	r, err := q.Query(ctx, `SELECT seq, chain_key_id, detail FROM audit_events WHERE action = ?`, ActionAnchor)
	if err != nil {
		return nil, fmt.Errorf("store: audit anchors: %w", err)
	}
	defer r.Close()
	var anchors []Anchor
	for r.Next() {
		var seq, keyID, detail any
		if err := r.Scan(&seq, &keyID, &detail); err != nil {
			return nil, fmt.Errorf("store: audit anchors: %w", err)
		}
		s, _ := seq.(int64)
		k, _ := keyID.(string)
		d, _ := detail.(string)
		if covers, _, ok := parseAnchor(d); ok {
			anchors = append(anchors, Anchor{Seq: s, Covers: covers, KeyID: k})
		}
	}
	return anchors, r.Err()
}
