package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"

	"backoffice/internal/domain"
)

const auditSelect = `SELECT id, at, actor_user_id, action, target_id, outcome, detail, seq, chain_key_id, hash FROM audit_events`

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
		add("at >= ?", micros(*f.From))
	}
	if f.To != nil {
		add("at < ?", micros(*f.To))
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
	err := s.snapshot(ctx, func(q querier) error {
		count := `SELECT COUNT(*) FROM audit_events` + where
		if where == "" {
			count = `SELECT COALESCE(MAX(seq), 0) FROM audit_events`
		}
		if err := q.row(ctx, count, args...).Scan(&total); err != nil {
			return fmt.Errorf("store: count audit events: %w", noRows(err))
		}
		r, err := q.query(ctx, auditSelect+where+` ORDER BY seq DESC LIMIT ? OFFSET ?`, append(args, size, (page-1)*size)...)
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

// auditRow is an audit event as stored: the link as bytes, the chain columns possibly NULL (a
// legacy event, or a row someone wrote by hand).
type auditRow struct {
	e     domain.AuditEvent
	seq   sql.NullInt64
	keyID sql.NullString
	hash  []byte
}

func scanAuditRow(r scanner) (auditRow, error) {
	var a auditRow
	var at int64
	err := r.Scan(&a.e.ID, &at, &a.e.ActorUserID, &a.e.Action, &a.e.TargetID, &a.e.Outcome, &a.e.Detail, &a.seq, &a.keyID, &a.hash)
	a.e.At = fromMicros(at)
	a.e.Seq, a.e.ChainKeyID, a.e.Hash = a.seq.Int64, a.keyID.String, hexHash(a.hash)
	return a, err
}

func scanAuditEvent(r scanner) (domain.AuditEvent, error) {
	a, err := scanAuditRow(r)
	return a.e, err
}

// ChainReport is what VerifyAuditChain found.
type ChainReport struct {
	// Events counts every event; Legacy those written before the chain existed (numbered, not
	// linked), which precede the first link.
	Events, Legacy int64
	// Head is the newest event (zero when there are none): its sequence number, id and link.
	Head domain.AuditEvent
	// Break is the first event where the chain does not hold, nil when it is whole.
	Break *ChainBreak
}

// ChainBreak names the first event at which the chain does not hold, and why.
type ChainBreak struct {
	Seq    int64
	ID     domain.ID
	Reason string
}

func (b *ChainBreak) Error() string {
	if b.ID == "" {
		return fmt.Sprintf("audit chain broken at seq %d: %s", b.Seq, b.Reason)
	}
	return fmt.Sprintf("audit chain broken at seq %d (event %s): %s", b.Seq, b.ID, b.Reason)
}

// VerifyAuditChain walks the whole trail in sequence order, in one snapshot, and checks that it
// is one unbroken chain: numbered from 1 without gaps, legacy events only before the first link,
// and every link the MAC of the one before and the event under its recorded key. An altered row
// fails its own link, a removed one leaves a gap (or, renumbered, fails the next link), an
// inserted one fails its link or sits outside the numbering. head, when not "", is a link recorded
// earlier (hex): it must be in the chain. That is what catches a cut-off tail, which the database
// alone cannot tell from a shorter trail.
func (s *Store) VerifyAuditChain(ctx context.Context, sig ChainSigner, head string) (ChainReport, error) {
	var rep ChainReport
	var want []byte
	if head != "" {
		var err error
		if want, err = hex.DecodeString(head); err != nil || len(want) == 0 {
			return rep, fmt.Errorf("store: --head %q is not a link in hex", head)
		}
	}
	err := s.snapshot(ctx, func(q querier) error {
		var unnumbered int64
		if err := q.row(ctx, `SELECT COUNT(*) FROM audit_events WHERE seq IS NULL`).Scan(&unnumbered); err != nil {
			return fmt.Errorf("store: verify audit chain: %w", err)
		}
		if unnumbered > 0 {
			rep.Break = &ChainBreak{Reason: fmt.Sprintf("%d events have no sequence number: inserted outside the chain", unnumbered)}
			return nil
		}
		r, err := q.query(ctx, auditSelect+` ORDER BY seq`)
		if err != nil {
			return fmt.Errorf("store: verify audit chain: %w", err)
		}
		defer r.Close()
		w := chainWalk{sig: sig, rep: &rep, want: want}
		for r.Next() && rep.Break == nil {
			a, err := scanAuditRow(r)
			if err != nil {
				return fmt.Errorf("store: verify audit chain: %w", err)
			}
			w.step(a)
		}
		if err := r.Err(); err != nil {
			return fmt.Errorf("store: verify audit chain: %w", err)
		}
		w.finish()
		return nil
	})
	return rep, err
}

// chainWalk checks one event after another.
type chainWalk struct {
	sig     ChainSigner
	rep     *ChainReport
	want    []byte
	prev    []byte
	chained bool
	found   bool
}

func (w *chainWalk) step(a auditRow) {
	e := a.e
	broken := func(format string, args ...any) {
		w.rep.Break = &ChainBreak{Seq: e.Seq, ID: e.ID, Reason: fmt.Sprintf(format, args...)}
	}
	if next := w.rep.Events + 1; e.Seq != next {
		if e.Seq > next {
			w.rep.Break = &ChainBreak{Seq: next, Reason: fmt.Sprintf("missing: removed (the next event is seq %d, %s)", e.Seq, e.ID)}
		} else {
			broken("numbered out of order (after seq %d)", w.rep.Events)
		}
		return
	}
	w.rep.Events++
	switch {
	case !a.keyID.Valid && a.hash == nil && !w.chained:
		w.rep.Legacy++
	case !a.keyID.Valid || a.hash == nil:
		broken("no link after the chain began: inserted, or its link removed")
		return
	default:
		w.chained = true
		h, err := link(w.sig, w.prev, e)
		if err != nil {
			broken("its link was made under key %q, which the ring does not hold: add that key to BACKOFFICE_MASTER_KEYS to check it", e.ChainKeyID)
			return
		}
		if !bytes.Equal(h, a.hash) {
			broken("its link does not match: the event was altered, inserted, or follows an altered one")
			return
		}
		w.prev = h
	}
	if w.want != nil && bytes.Equal(a.hash, w.want) {
		w.found = true
	}
	w.rep.Head = e
}

// finish checks the recorded head, if any, against the chain: a link recorded earlier that is no
// longer in it means the tail it ended was cut off (or rewritten).
func (w *chainWalk) finish() {
	if w.rep.Break == nil && w.want != nil && !w.found {
		w.rep.Break = &ChainBreak{Seq: w.rep.Head.Seq + 1, Reason: "the recorded head " + hex.EncodeToString(w.want) + " is not in the chain: its tail was cut off (or rewritten)"}
	}
}
