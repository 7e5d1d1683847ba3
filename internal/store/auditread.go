package store

import (
	"context"
	"fmt"
	"strings"

	"backoffice/internal/domain"
	"backoffice/internal/store/column"
	"backoffice/internal/store/sqltx"
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
func (s *Store) ListAuditEvents(ctx context.Context, f domain.AuditFilter, page, size int64) ([]domain.AuditEvent, int64, error) {
	where, args := auditWhere(f)
	var total int64
	var events []domain.AuditEvent
	err := s.snapshot(ctx, func(q *sqltx.Tx) error {
		count := `SELECT COUNT(*) FROM audit_events` + where
		if where == "" {
			count = `SELECT COALESCE(MAX(seq), 0) FROM audit_events`
		}
		if err := q.QueryRow(ctx, count, args...).Scan(&total); err != nil {
			return fmt.Errorf("store: count audit events: %w", noRows(err))
		}
		r, err := q.Query(ctx, auditSelect+where+` ORDER BY seq DESC LIMIT ? OFFSET ?`, append(args, size, pageOffset(page, size))...)
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
// is one unbroken chain (see ChainWalk) from its genesis on. An altered row fails its own link, a
// removed one leaves a gap (or, renumbered, fails the next link), an inserted or stripped one
// fails its link or sits after the genesis unlinked. expects are what was kept outside the
// database (signed checkpoints, a recorded head): the chain must still hold each. That is what
// catches a cut-off tail, which the database alone cannot tell from a shorter trail.
func (s *Store) VerifyAuditChain(ctx context.Context, sig ChainSigner, expects []ChainExpect) (ChainReport, error) {
	var rep ChainReport
	err := s.snapshot(ctx, func(q *sqltx.Tx) error {
		var unnumbered int64
		if err := q.QueryRow(ctx, `SELECT COUNT(*) FROM audit_events WHERE seq IS NULL`).Scan(&unnumbered); err != nil {
			return fmt.Errorf("store: verify audit chain: %w", err)
		}
		if unnumbered > 0 {
			rep.Break = &ChainBreak{Reason: fmt.Sprintf("%d events have no sequence number: inserted outside the chain", unnumbered)}
			return nil
		}
		var err error
		if rep, err = walkChain(ctx, q, sig, expects); err != nil {
			return fmt.Errorf("store: verify audit chain: %w", err)
		}
		return nil
	})
	return rep, err
}

// walkChain checks the whole trail in q from its genesis, against the anchors and expects.
func walkChain(ctx context.Context, q *sqltx.Tx, sig ChainSigner, expects []ChainExpect) (ChainReport, error) {
	g, err := readGenesis(ctx, q)
	if err != nil {
		return ChainReport{}, err
	}
	anchored, err := anchoredSeqs(ctx, q, "")
	if err != nil {
		return ChainReport{}, err
	}
	w := NewChainWalk(sig, &g, anchored, expects)
	if err := eachAuditEvent(ctx, q, w.Step); err != nil {
		return ChainReport{}, err
	}
	return w.Finish(), nil
}

// eachAuditEvent reads the whole trail in sequence order, in q, until fn returns false.
func eachAuditEvent(ctx context.Context, q *sqltx.Tx, fn func(domain.AuditEvent) bool) error {
	r, err := q.Query(ctx, auditSelect+` ORDER BY seq`)
	if err != nil {
		return err
	}
	defer r.Close()
	for r.Next() {
		e, err := scanAuditEvent(r)
		if err != nil {
			return err
		}
		if !fn(e) {
			break
		}
	}
	return r.Err()
}

// anchoredSeqs are the sequence numbers the trail's anchors name, as their details say (a walk
// keeps the digests there, and believes an anchor once its link holds); with keyID, only the
// anchors made under that key.
func anchoredSeqs(ctx context.Context, q *sqltx.Tx, keyID string) ([]int64, error) {
	query, args := `SELECT detail FROM audit_events WHERE action = ?`, []any{ActionAuditAnchor}
	if keyID != "" {
		query, args = query+` AND chain_key_id = ?`, append(args, keyID)
	}
	r, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: audit anchors: %w", err)
	}
	defer r.Close()
	var seqs []int64
	for r.Next() {
		var detail string
		if err := r.Scan(&detail); err != nil {
			return nil, fmt.Errorf("store: audit anchors: %w", err)
		}
		if seq, _, ok := parseAnchor(detail); ok {
			seqs = append(seqs, seq)
		}
	}
	return seqs, r.Err()
}
