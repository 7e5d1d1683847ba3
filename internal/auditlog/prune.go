package auditlog

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"backoffice/internal/checkpoint"
	"backoffice/internal/column"
	"backoffice/internal/domain"
	"backoffice/internal/sqltx"

	"golang.org/x/mod/sumdb/tlog"
)

// Retention (`backoffice audit prune`, docs/compliance.md "Retention"): the events below a seq N
// are archived and then removed in one transaction with a signed prune note (checkpoint.Prune,
// table audit_prune) that fixes the chain's link and digest at N-1 and the audit tree's root
// there. The tree's rows all stay, so every proof of a kept event still verifies. A walk of the
// trail starts from the newest prune instead of the genesis, and only from one whose note holds
// under a key of the ring: a prune row a database attacker wrote (to hide removed events) is a
// break.

// checkpointKeys gives the checkpoint public key of a master key, which signs prune notes as it
// signs checkpoints (*secrets.Ring is one).
type checkpointKeys interface {
	CheckpointPublicKey(keyID string) (ed25519.PublicKey, error)
}

// pruneRow is the newest row of audit_prune as stored.
type pruneRow struct {
	below int64
	note  string
}

// readPrune reads the newest prune (the highest below); found is false when the trail was never
// pruned.
func readPrune(ctx context.Context, q runner) (row pruneRow, found bool, err error) {
	err = q.QueryRow(ctx, `SELECT below, note FROM audit_prune ORDER BY below DESC LIMIT 1`).Scan(&row.below, &row.note)
	if errors.Is(err, sql.ErrNoRows) {
		return row, false, nil
	}
	if err != nil {
		return row, false, fmt.Errorf("store: audit prune: %w", err)
	}
	return row, true, nil
}

// AuditPruneNote is the newest prune's note as stored (a C2SP signed note, checkpoint.Prune's),
// served to auditors as it is: they check its signature, as they check a checkpoint's. found is
// false when the trail was never pruned.
func (s *Log) AuditPruneNote(ctx context.Context) (note []byte, found bool, err error) {
	row, found, err := readPrune(ctx, s.db)
	if err != nil || !found {
		return nil, found, err
	}
	return []byte(row.note), true, nil
}

// openPrune checks a prune row: a prune note for the same seq, signed under a key of ver's ring.
// A row that is not is a break: the events below it are gone with nothing that vouches for their
// removal. gap is set instead when ver cannot check signatures at all.
func openPrune(ver ChainVerifier, row pruneRow) (p checkpoint.Prune, brk *ChainBreak, gap *ChainGap) {
	missing := func(why string) *ChainBreak {
		return &ChainBreak{Seq: 1, To: max(row.below-1, 1), Missing: true,
			Reason: fmt.Sprintf("the trail holds a prune record below seq %d that %s: the events below it were removed without the retention policy's signed record (forged)", row.below, why)}
	}
	p, err := checkpoint.ParsePrune([]byte(row.note))
	switch {
	case err != nil:
		return p, missing("is not a prune note (" + err.Error() + ")"), nil
	case p.Below != row.below:
		return p, missing(fmt.Sprintf("holds a note for seq %d", p.Below)), nil
	}
	keys, ok := ver.(checkpointKeys)
	if !ok {
		return p, nil, &ChainGap{From: 1, To: row.below - 1, Reason: fmt.Sprintf("the trail was pruned below seq %d, and the prune's signature is checked with the master key ring", row.below)}
	}
	if pub, err := keys.CheckpointPublicKey(p.KeyID); err == nil && p.SignedBy(pub) {
		return p, nil, nil
	}
	for _, id := range ver.KeyIDs() {
		if pub, err := keys.CheckpointPublicKey(id); err == nil && p.SignedBy(pub) {
			return p, missing(fmt.Sprintf("is signed under key %s but names key %q", id, p.KeyID)), nil
		}
	}
	return p, missing(fmt.Sprintf("is not signed under key %q or any key of the ring (if it was signed under a key since removed from the ring, verify with a ring that holds it)", p.KeyID)), nil
}

// meetPrune checks the checkpoints given at or below base, the seq whose link and digest the
// prune's note fixed (the walk's digest, and link, when it is called). One at base must fix the
// same, or one of them was altered: a break. One below fixes only pruned events, whose digest no
// walk recomputes: its tree root is checked with the others' (audit verify's checkTrees), which
// the report's note says; one of the format before the tree signed no root, and nothing here can
// check it: the walk ends unchecked (prunedGap), never intact over it.
func (w *ChainWalk) meetPrune(base int64, link []byte) {
	rooted := 0
	for seq, xs := range w.expects {
		if seq > base {
			continue
		}
		delete(w.expects, seq)
		for _, x := range xs {
			switch {
			case seq == base && (!bytes.Equal(x.Digest, w.rep.Digest) || !bytes.Equal(x.Link, link)):
				w.rep.Break = &ChainBreak{Seq: base, Reason: fmt.Sprintf("%s signed another trail at seq %d than the prune's note, which fixed it there: one of them was altered", x.What, base)}
				return
			case seq == base:
				w.rep.Matched++
			case x.Root != nil:
				rooted++
			default:
				w.unrootedBelowPrune(x, base)
			}
		}
	}
	if rooted > 0 {
		w.rep.Notes = append(w.rep.Notes, fmt.Sprintf("%d checkpoints given fix only events pruned below seq %d: their trees are checked against the audit tree, their digests cannot be (the events are in the prune's archive)", rooted, base+1))
	}
}

// unrootedBelowPrune widens the walk's prunedGap to x, a checkpoint of the format before the tree
// that fixes only events pruned below base+1.
func (w *ChainWalk) unrootedBelowPrune(x ChainExpect, base int64) {
	g := w.prunedGap
	if g == nil {
		g = &ChainGap{From: x.Seq, To: x.Seq}
		w.prunedGap = g
	}
	g.From, g.To = min(g.From, x.Seq), max(g.To, x.Seq)
	g.Reason = fmt.Sprintf("checkpoints of the format before the audit tree fix only events pruned below seq %d, and sign no tree root: nothing but the prune's archive can check them (verify with a checkpoints file without them, or check them against the archive)", base+1)
}

// resumeAtPrune starts w, a walk from the genesis not yet begun, at the newest prune in q, if the
// trail was pruned: the chain, its digest and the audit tree carry on from what the prune's note
// fixed at seq below-1, and the rows the prune removed must be gone.
func (w *ChainWalk) resumeAtPrune(ctx context.Context, q runner, ver ChainVerifier) error {
	row, found, err := readPrune(ctx, q)
	if err != nil || !found {
		return err
	}
	p, brk, gap := openPrune(ver, row)
	w.rep.PrunedBelow = row.below
	switch {
	case brk != nil:
		w.rep.Break = brk
		return nil
	case gap != nil:
		// Nothing after it can be checked from a prune not checked: the walk stops here.
		w.pruneGap, w.stopped = gap, true
		return nil
	}
	link, _ := hex.DecodeString(p.Link)
	base := p.Below - 1
	w.rep.Prune = p
	w.rep.Events, w.rep.Digest = base, bytes.Clone(p.Digest)
	if _, ok := w.keep[base]; ok {
		w.keep[base] = w.rep.Digest
	}
	w.prev, w.begun = link, len(link) > 0
	w.cover(base)
	if w.meetPrune(base, link); w.rep.Break != nil {
		return nil
	}
	edge, err := readTreeEdge(ctx, q, base)
	if errors.Is(err, ErrTree) {
		w.rep.Break = &ChainBreak{Seq: base, Reason: fmt.Sprintf("the audit tree up to the prune below seq %d is not whole (%v): its rows were removed", p.Below, err)}
		return nil
	}
	if err != nil {
		return err
	}
	if root, err := tlog.TreeHash(base, mapReader(edge)); err != nil || root != p.Root {
		w.rep.Break = &ChainBreak{Seq: base, Reason: fmt.Sprintf("the audit tree up to the prune below seq %d is not the one its note signed: its rows were altered", p.Below)}
		return nil
	}
	w.tree = newTreeCheck(ver, base, edge)
	return nil
}

// prunedRowsLeft breaks the walk on a row numbered below the prune's seq that is still (or again)
// in the trail: the prune removed them all in the transaction that recorded it.
func (w *ChainWalk) prunedRowsLeft(ctx context.Context, q *sqltx.Tx) error {
	below := w.rep.PrunedBelow
	if below == 0 || w.rep.Break != nil || w.stopped {
		return nil
	}
	return auditRowsAfter(ctx, q, `WHERE seq >= 1 AND seq < ? ORDER BY seq LIMIT 1`, []any{below}, func(r auditRow) bool {
		w.rep.Break = &ChainBreak{Seq: r.e.Seq, ID: r.e.ID,
			Reason: fmt.Sprintf("the trail was pruned below seq %d, and this event is numbered below it: inserted after the prune", below)}
		return false
	})
}

// PrunePlan is what a prune below seq Below signs, as a walk of the whole trail just verified it:
// where the trail starts now (From: 1, or the last prune's seq), the chain's link and digest at
// Below-1, the audit tree's root of Below-1 leaves, and the newest time of the events to prune.
type PrunePlan struct {
	From, Below  int64
	Link         string
	Digest       []byte
	Root         tlog.Hash
	NewestPruned time.Time
	// Verified is the walk's proof of the whole trail.
	Verified Verified
}

// ErrNothingToPrune is a prune below a seq the trail starts at or after already.
var ErrNothingToPrune = errors.New("nothing to prune")

// PlanAuditPrune walks the whole trail under ver in one snapshot, against expects (the signed
// checkpoints), and returns what a prune below seq below signs: only of a trail that verified,
// taking nothing on trust. below must be after where the trail starts now (else
// ErrNothingToPrune) and at most its newest event.
func (s *Log) PlanAuditPrune(ctx context.Context, ver ChainVerifier, below int64, expects []ChainExpect) (PrunePlan, ChainReport, error) {
	var plan PrunePlan
	var rep ChainReport
	err := s.db.Snapshot(ctx, func(q *sqltx.Tx) error {
		w, err := walkChainKeeping(ctx, q, ver, expects, below-1)
		if err != nil {
			return err
		}
		rep = w.Finish()
		plan.From = max(rep.PrunedBelow, 1)
		if below <= plan.From {
			return nil
		}
		v, err := rep.Verified()
		if err != nil {
			return nil // the caller reports rep
		}
		if err := v.Err(); err != nil {
			return err
		}
		if below > v.Seq() {
			return fmt.Errorf("store: audit prune: seq %d is past the trail's newest event (%d): a prune keeps at least one event", below, v.Seq())
		}
		row, found, err := auditRowAt(ctx, q, below-1)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("store: audit prune: event %d is not in the trail", below-1)
		}
		root, err := tlog.TreeHash(below-1, treeReader{ctx, q})
		if err != nil {
			return fmt.Errorf("store: audit prune: the audit tree of %d events: %w", below-1, err)
		}
		var newest sql.NullInt64
		if err := q.QueryRow(ctx, `SELECT max(at) FROM audit_events WHERE seq < ?`, below).Scan(&newest); err != nil {
			return fmt.Errorf("store: audit prune: %w", err)
		}
		plan.Below, plan.Link, plan.Digest, plan.Root, plan.Verified = below, row.e.Hash, w.keep[below-1], root, v
		plan.NewestPruned = column.FromMicros(newest.Int64)
		return nil
	})
	if err == nil && below <= plan.From {
		err = fmt.Errorf("%w: the trail starts at seq %d", ErrNothingToPrune, plan.From)
	}
	return plan, rep, err
}

// treeReader reads stored hashes in q (tlog.HashReader).
type treeReader struct {
	ctx context.Context
	q   runner
}

func (r treeReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	return readTreeHashes(r.ctx, r.q, indexes)
}

// AuditSeqAt is the seq of the first event at or after t, by the events' times (0: none).
func (s *Log) AuditSeqAt(ctx context.Context, t time.Time) (int64, error) {
	var seq sql.NullInt64
	if err := s.db.QueryRow(ctx, `SELECT min(seq) FROM audit_events WHERE at >= ?`, column.Micros(t)).Scan(&seq); err != nil {
		return 0, fmt.Errorf("store: audit events: %w", err)
	}
	return seq.Int64, nil
}

// AuditEventsBetween hands each event of seq from to to-1 to fn in seq order, as stored, a page
// at a time.
func (s *Log) AuditEventsBetween(ctx context.Context, from, to int64, fn func(domain.AuditEvent) error) error {
	for next := from; next < to; {
		var page []domain.AuditEvent
		err := s.db.Snapshot(ctx, func(q *sqltx.Tx) error {
			return auditRowsAfter(ctx, q, `WHERE seq >= ? AND seq < ? ORDER BY seq LIMIT ?`, []any{next, to, walkPage}, func(r auditRow) bool {
				page = append(page, r.e)
				return true
			})
		})
		if err != nil {
			return fmt.Errorf("store: audit events: %w", err)
		}
		if len(page) == 0 {
			return fmt.Errorf("store: audit events: seq %d is not in the trail", next)
		}
		for _, e := range page {
			if e.Seq != next {
				return fmt.Errorf("store: audit events: seq %d is not in the trail", next)
			}
			if err := fn(e); err != nil {
				return err
			}
			next++
		}
	}
	return nil
}

// ErrPruneMoved is a prune whose trail changed between its plan and its transaction (another
// prune, or the event it carries on from altered): nothing was removed.
var ErrPruneMoved = errors.New("store: audit prune: the trail changed since it was verified; nothing was removed")

// PruneAudit records the signed prune note p of plan and removes the events below its seq, in one
// transaction: a crash leaves the trail as it was or pruned with its record, never one without
// the other. The tree's rows stay. The trail must still start where the plan found it, and hold
// the event the prune carries on from with the same link.
func (s *Log) PruneAudit(ctx context.Context, plan PrunePlan, p checkpoint.Prune) error {
	if p.Below != plan.Below || p.Link != plan.Link || !bytes.Equal(p.Digest, plan.Digest) || p.Root != plan.Root || plan.Verified.Err() != nil {
		return errors.New("store: audit prune: the note is not the plan's")
	}
	return s.db.Tx(ctx, func(q *sqltx.Tx) error {
		row, found, err := readPrune(ctx, q)
		if err != nil {
			return err
		}
		if from := map[bool]int64{true: row.below, false: 1}[found]; from != plan.From {
			return ErrPruneMoved
		}
		at, found, err := auditRowAt(ctx, q, plan.Below-1)
		if err != nil {
			return err
		}
		if !found || at.e.Hash != plan.Link {
			return ErrPruneMoved
		}
		if _, err := q.Exec(ctx, `INSERT INTO audit_prune (below, note) VALUES (?, ?)`, p.Below, string(p.Note)); err != nil {
			return fmt.Errorf("store: audit prune: %w", err)
		}
		if _, err := q.Exec(ctx, `DELETE FROM audit_events WHERE seq < ?`, p.Below); err != nil {
			return fmt.Errorf("store: audit prune: %w", err)
		}
		return readBackPrune(ctx, q, p)
	})
}

// ResignAuditPrune puts p, the newest prune signed anew (by keys rewrap, under the active key),
// in place of its note as v, a walk with the ring, checked it, so that the key that signed it may
// leave the ring: a note under a key the ring no longer holds is a break, so one forged under a
// leaked old key is too. The row must still hold the note v checked, and holds p when read back
// in the same transaction, or nothing changes.
func (s *Log) ResignAuditPrune(ctx context.Context, v Verified, p checkpoint.Prune) error {
	if err := v.Err(); err != nil {
		return err
	}
	old, found := v.Prune()
	if !found || !old.SameCut(p) {
		return errors.New("store: audit prune: the note signed anew is not the prune the walk verified")
	}
	return s.db.Tx(ctx, func(q *sqltx.Tx) error {
		row, found, err := readPrune(ctx, q)
		if err != nil {
			return err
		}
		if !found || row.below != old.Below || row.note != string(old.Note) {
			return errors.New("store: audit prune: the newest prune changed since the trail was verified; nothing was signed anew (run backoffice audit verify)")
		}
		if _, err := q.Exec(ctx, `UPDATE audit_prune SET note = ? WHERE below = ? AND note = ?`, string(p.Note), p.Below, row.note); err != nil {
			return fmt.Errorf("store: audit prune: %w", err)
		}
		if row, found, err = readPrune(ctx, q); err != nil {
			return err
		}
		if !found || row.below != p.Below || row.note != string(p.Note) {
			return fmt.Errorf("store: audit prune below seq %d: its note signed anew did not read back as written, so nothing changed (something in the database drops or alters writes to audit_prune: a trigger, a rule or a view in its place): %w", p.Below, ErrNotLanded)
		}
		return nil
	})
}

// readBackPrune checks, in the prune's transaction, that it landed as written: the note recorded
// for its seq, no event left below it, the event it carries on from still there. A trigger, a
// rule or a view could swallow the record or the delete and report success; the prune is then
// refused and rolled back, nothing removed.
func readBackPrune(ctx context.Context, q *sqltx.Tx, p checkpoint.Prune) error {
	var note sql.NullString
	var left, kept int64
	err := q.QueryRow(ctx, `SELECT (SELECT note FROM audit_prune WHERE below = ?), (SELECT count(*) FROM audit_events WHERE seq < ?), (SELECT count(*) FROM audit_events WHERE seq = ?)`,
		p.Below, p.Below, p.Below).Scan(&note, &left, &kept)
	if err != nil {
		return fmt.Errorf("store: audit prune: read back: %w", err)
	}
	if note.String != string(p.Note) || left != 0 || kept != 1 {
		return &notLandedError{what: fmt.Sprintf("audit prune below seq %d: the record %s, %d events left below it, %d at it", p.Below,
			map[bool]string{true: "as written", false: "missing or altered"}[note.String == string(p.Note)], left, kept)}
	}
	return nil
}

// sealedBeforePrune tells a walk begun at a prune whose genesis is sealed under a key of the ring:
// the seal fixes where the chain begins, and the walk placed every event it met against it, so a
// trail pruned past its beginning still proves it (keys rewrap seals it anew).
func (w *ChainWalk) sealedBeforePrune() bool {
	return w.rep.PrunedBelow > 0 && w.pruneGap == nil && w.genesis != nil && w.genesis.verdict == genesisSealed
}
