package auditlog

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"backoffice/internal/column"
	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// The audit writer's read-back. An INSERT that returns without an error has not shown that its
// rows are in the table: a trigger can drop a row (SQLite's RAISE(IGNORE), PostgreSQL's BEFORE
// trigger returning NULL), delete or alter it after it was written, a rule can turn the insert
// into nothing or into a delete, a policy can hide it. So every append reads back, in its own
// transaction and after the insert (on PostgreSQL after SET CONSTRAINTS ALL IMMEDIATE, so that a
// deferred trigger has run), the rows at the seqs it wrote, and compares every column with what
// it meant to write; anything missing, added or different fails the whole group, which is rolled
// back, and its callers get ErrNotLanded: a decrypt answers 503 and no SSN.
//
// What a read-back cannot see is a read that is fooled the same way as the write: a view renamed
// into the table's place, whose INSTEAD OF triggers keep the rows where the view shows them to
// this transaction only, or (PostgreSQL) an audit_chain_append_read replaced by one that writes
// nothing and answers as if it had. Keeping those out is the catalog check's (the trail's tables
// and functions are what the migrations made); the checkpoint signer's memory of this process's
// commits (CommitMemory) catches them before anything is signed over them.

// ErrNotLanded means an audit group did not read back as it was written, in the transaction that
// wrote it: nothing of it was committed (or, where the database's own check was replaced, what was
// committed differs from it, a break the chain shows). It is an errUnavailable: the caller is
// answered 503, never the SSN its event was to record.
var ErrNotLanded = errors.New("store: audit events did not land as written")

// notLandedError says which event did not land, and how.
type notLandedError struct{ what string }

func (e *notLandedError) Error() string {
	return "store: audit events did not land as written, so none was committed: " + e.what +
		" (something in the database drops, alters or hides rows of audit_events: a trigger, a rule, a policy or a view in its place; run backoffice audit verify)"
}

func (e *notLandedError) Is(target error) bool {
	return target == ErrNotLanded || target == errUnavailable
}

// auditReadBack reads the rows at the seqs from first to last, in seq order.
var auditReadBack = auditSelect + ` WHERE seq >= ? AND seq <= ? ORDER BY seq`

// readBack reads, in q, the rows at the seqs of written (numbered in a row, in order), and checks
// they are written exactly: ErrNotLanded otherwise.
func readBack(ctx context.Context, q *sqltx.Tx, deferredTriggers bool, written []domain.AuditEvent) error {
	if len(written) == 0 {
		return nil
	}
	if deferredTriggers {
		// A constraint trigger deferred to the commit would run after the read-back: run it now.
		if _, err := q.Exec(ctx, `SET CONSTRAINTS ALL IMMEDIATE`); err != nil {
			return fmt.Errorf("store: audit event: %w", q.Classify(err))
		}
	}
	st, err := q.Cached(ctx, auditReadBack)
	if err != nil {
		return fmt.Errorf("store: audit event: read back: %w", err)
	}
	defer st.Close()
	rows, err := st.QueryContext(ctx, written[0].Seq, written[len(written)-1].Seq)
	if err != nil {
		return fmt.Errorf("store: audit event: read back: %w", q.Classify(err))
	}
	r := q.ClassifiedRows(rows)
	defer r.Close()
	got := make([]auditStored, 0, len(written))
	var v [auditColumns]any
	dest := make([]any, auditColumns)
	for i := range v {
		dest[i] = &v[i]
	}
	for r.Next() {
		// Read as the driver gives them (no conversion by reflection, which cost more than the
		// rest of the read-back), then taken as what the writer wrote.
		if err := r.Scan(dest...); err != nil {
			return fmt.Errorf("store: audit event: read back: %w", err)
		}
		a, ok := storedOf(&v)
		if !ok {
			// A value the service never writes (text in an integer column): not what was written.
			return &notLandedError{what: fmt.Sprintf("seq %d-%d: a row does not read as an event (%v)", written[0].Seq, written[len(written)-1].Seq, v)}
		}
		got = append(got, a)
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("store: audit event: read back: %w", err)
	}
	return checkLanded(written, got)
}

// storedOf is a row of Columns as the driver gave it, taken as an auditStored: false when a
// column holds a value of a kind the writer never writes there.
func storedOf(v *[auditColumns]any) (auditStored, bool) {
	var a auditStored
	ok := true
	text := func(x any) string {
		switch x := x.(type) {
		case string:
			return x
		case []byte:
			return string(x)
		}
		ok = false
		return ""
	}
	number := func(x any) int64 {
		n, isInt := x.(int64)
		ok = ok && isInt
		return n
	}
	a.e.ID = domain.ID(text(v[0]))
	a.e.At = column.FromMicros(number(v[1]))
	a.e.ActorUserID = domain.ID(text(v[2]))
	a.e.Action, a.e.TargetID, a.e.Outcome, a.e.Detail = text(v[3]), text(v[4]), text(v[5]), text(v[6])
	if v[7] != nil {
		a.seq.Int64, a.seq.Valid = number(v[7]), true
		a.e.Seq = a.seq.Int64
	}
	if v[8] != nil {
		a.keyID.String, a.keyID.Valid = text(v[8]), true
		a.e.ChainKeyID = a.keyID.String
	}
	if v[9] != nil {
		h, isBytes := v[9].([]byte)
		ok = ok && isBytes
		a.hash, a.e.Hash = h, hexHash(h)
	}
	return a, ok
}

// checkLanded compares the rows read back (in seq order) with the events written (numbered in a
// row, in order), every column, and names the first event that differs.
func checkLanded(written []domain.AuditEvent, got []auditStored) error {
	i := 0
	for _, w := range written {
		for i < len(got) && got[i].seq.Valid && got[i].seq.Int64 < w.Seq {
			return &notLandedError{what: fmt.Sprintf("seq %d: a row this group did not write (id %s)", got[i].seq.Int64, got[i].e.ID)}
		}
		if i == len(got) || got[i].seq.Int64 != w.Seq {
			return &notLandedError{what: fmt.Sprintf("seq %d (event %s, %s %s): missing", w.Seq, w.ID, w.Action, w.Outcome)}
		}
		if d := landedDiff(w, got[i]); d != "" {
			return &notLandedError{what: fmt.Sprintf("seq %d (event %s, %s %s): %s", w.Seq, w.ID, w.Action, w.Outcome, d)}
		}
		i++
	}
	if i < len(got) {
		return &notLandedError{what: fmt.Sprintf("seq %d: a row this group did not write (id %s)", got[i].seq.Int64, got[i].e.ID)}
	}
	return nil
}

// landedDiff names the first column of row that differs from w, "" when none does.
func landedDiff(w domain.AuditEvent, row auditStored) string {
	g := row.e
	differs := func(col string, got, want any) string {
		return fmt.Sprintf("its %s reads %q, not %q", col, fmt.Sprint(got), fmt.Sprint(want))
	}
	switch {
	case g.ID != w.ID:
		return differs("id", g.ID, w.ID)
	case column.Micros(g.At) != column.Micros(w.At):
		return differs("at", column.Micros(g.At), column.Micros(w.At))
	case g.ActorUserID != w.ActorUserID:
		return differs("actor_user_id", g.ActorUserID, w.ActorUserID)
	case g.Action != w.Action:
		return differs("action", g.Action, w.Action)
	case g.TargetID != w.TargetID:
		return differs("target_id", g.TargetID, w.TargetID)
	case g.Outcome != w.Outcome:
		return differs("outcome", g.Outcome, w.Outcome)
	case g.Detail != w.Detail:
		return differs("detail", g.Detail, w.Detail)
	case !row.keyID.Valid || g.ChainKeyID != w.ChainKeyID:
		return differs("chain_key_id", g.ChainKeyID, w.ChainKeyID)
	case row.hash == nil || g.Hash != w.Hash:
		return differs("hash", g.Hash, w.Hash)
	}
	return ""
}

// landedJSON is a row as PostgreSQL's audit_chain_append_read (migration 0019) read it back, in
// the detail of its refusal.
type landedJSON struct {
	ID         string  `json:"id"`
	At         int64   `json:"at"`
	Actor      string  `json:"actor_user_id"`
	Action     string  `json:"action"`
	Target     string  `json:"target_id"`
	Outcome    string  `json:"outcome"`
	Detail     string  `json:"detail"`
	Seq        *int64  `json:"seq"`
	ChainKeyID *string `json:"chain_key_id"`
	Hash       *string `json:"hash"` // hex
}

// landedRows decodes the rows audit_chain_append_read read back (a JSON array).
func landedRows(text string) ([]auditStored, error) {
	var rows []landedJSON
	if err := json.Unmarshal([]byte(text), &rows); err != nil {
		return nil, fmt.Errorf("store: audit event: the rows read back: %w", err)
	}
	out := make([]auditStored, len(rows))
	for i, r := range rows {
		a := &out[i]
		a.e = domain.AuditEvent{ID: domain.ID(r.ID), At: column.FromMicros(r.At), ActorUserID: domain.ID(r.Actor),
			Action: r.Action, TargetID: r.Target, Outcome: r.Outcome, Detail: r.Detail}
		if r.Seq != nil {
			a.seq.Int64, a.seq.Valid = *r.Seq, true
			a.e.Seq = *r.Seq
		}
		if r.ChainKeyID != nil {
			a.keyID.String, a.keyID.Valid = *r.ChainKeyID, true
			a.e.ChainKeyID = *r.ChainKeyID
		}
		if r.Hash != nil {
			h, err := hex.DecodeString(*r.Hash)
			if err != nil {
				return nil, fmt.Errorf("store: audit event: the rows read back: %w", err)
			}
			a.hash, a.e.Hash = h, hexHash(h)
		}
	}
	return out, nil
}
