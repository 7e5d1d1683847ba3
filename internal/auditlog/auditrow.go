package auditlog

import (
	"database/sql"
	"encoding/hex"
	"fmt"

	"backoffice/internal/column"
	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// The audit event as stored: the one place its columns are named, in their order, with the
// values written into them (appendAuditRow) and read out of them (scanAuditRow). Every writer and
// reader of audit_events goes through these: the chain's appends (SQLite's multi-row INSERTs,
// PostgreSQL's arrays), the import of an export's events, every read and the export.

// Columns are the columns of an audit event with its place in the chain, in the order of
// Args and ScanEvent.
const Columns = "id, at, actor_user_id, action, target_id, outcome, detail, seq, chain_key_id, hash"

// auditArrayTypes are Columns' types as PostgreSQL arrays, in the same order.
const auditArrayTypes = "text[], bigint[], text[], text[], text[], text[], text[], bigint[], text[], bytea[]"

const (
	auditColumns    = 10
	auditSelect     = `SELECT ` + Columns + ` FROM audit_events`
	auditInsertHead = `INSERT INTO audit_events (` + Columns + `) VALUES `
)

// appendAuditRow appends e's row as stored to args, in Columns' order: its link as bytes
// (hash), and no key id where it has no link (an event from before the chain).
func appendAuditRow(args []any, e *domain.AuditEvent, hash []byte) []any {
	var keyID sql.NullString
	if hash != nil {
		keyID = sql.NullString{String: e.ChainKeyID, Valid: true}
	}
	return append(args, e.ID, column.Micros(e.At), e.ActorUserID, e.Action, e.TargetID, e.Outcome, e.Detail, e.Seq, keyID, hash)
}

// Args is an event's row as stored, its place in the chain included (an export's): the link
// from hex, and no key id or link for an event from before the chain.
func Args(e *domain.AuditEvent) ([]any, error) {
	var hash []byte
	if e.Hash != "" {
		var err error
		if hash, err = hex.DecodeString(e.Hash); err != nil {
			return nil, err
		}
	}
	return appendAuditRow(make([]any, 0, auditColumns), e, hash), nil
}

// auditArrays is rows of appendAuditRow (auditColumns values each) as one array per column, in
// the same order, for PostgreSQL's unnest (see auditArrayTypes).
func auditArrays(args []any) ([]any, error) {
	n := len(args) / auditColumns
	arrays := make([]any, auditColumns)
	for c := range auditColumns {
		switch args[c].(type) {
		case int64:
			a := make([]int64, n)
			for r := range n {
				a[r] = args[r*auditColumns+c].(int64)
			}
			arrays[c] = a
		case []byte:
			a := make([][]byte, n)
			for r := range n {
				a[r] = args[r*auditColumns+c].([]byte)
			}
			arrays[c] = a
		default:
			a := make([]string, n)
			for r := range n {
				s, err := textOf(args[r*auditColumns+c])
				if err != nil {
					return nil, fmt.Errorf("store: audit event: column %d: %w", c, err)
				}
				a[r] = s
			}
			arrays[c] = a
		}
	}
	return arrays, nil
}

// textOf is a text column's value as a string.
func textOf(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case domain.ID:
		return string(v), nil
	case sql.NullString:
		return v.String, nil
	}
	return "", fmt.Errorf("a %T is no text", v)
}

// auditStored is an audit event as read back: the chain columns possibly NULL (a legacy event,
// or a row someone wrote by hand).
type auditStored struct {
	e     domain.AuditEvent
	seq   sql.NullInt64
	keyID sql.NullString
	hash  []byte
}

// scanAuditRow reads a row of Columns.
func scanAuditRow(r scanner) (auditStored, error) {
	var a auditStored
	var at int64
	err := r.Scan(&a.e.ID, &at, &a.e.ActorUserID, &a.e.Action, &a.e.TargetID, &a.e.Outcome, &a.e.Detail, &a.seq, &a.keyID, &a.hash)
	a.e.At = column.FromMicros(at)
	a.e.Seq, a.e.ChainKeyID, a.e.Hash = a.seq.Int64, a.keyID.String, hexHash(a.hash)
	return a, err
}

func scanAuditEvent(r scanner) (domain.AuditEvent, error) {
	a, err := scanAuditRow(r)
	return a.e, err
}

// ScanEvent reads a row of Columns.
func ScanEvent(s sqltx.Scanner) (domain.AuditEvent, error) { return scanAuditEvent(s) }

// auditRow is a row of audit_events as a walk of the chain reads it: whatever its columns hold.
// Someone with database access can write a value of another type (SQLite keeps text in an integer
// column) or NULL where the service never does; the walk reports such a row as the break it is
// instead of failing to read the trail.
type auditRow struct {
	e domain.AuditEvent
	// numbered is false when seq is NULL (PostgreSQL allows it).
	numbered bool
	// bad says which column does not hold a value of its kind ("" when every one does).
	bad string
}

// scanAuditWalkRow reads a row of Columns into an auditRow, never failing on a value of the
// wrong type.
func scanAuditWalkRow(r scanner) (auditRow, error) {
	var v [auditColumns]any
	dest := make([]any, auditColumns)
	for i := range v {
		dest[i] = &v[i]
	}
	if err := r.Scan(dest...); err != nil {
		return auditRow{}, err
	}
	var a auditRow
	var l looseRow
	text := func(i int, name string) string {
		s, _ := l.text(v[i], name, false)
		return s
	}
	a.e.ID = domain.ID(text(0, "id"))
	at, ok := l.number(v[1], "at")
	if !ok {
		l.note("at is NULL")
	}
	a.e.At = column.FromMicros(at)
	a.e.ActorUserID = domain.ID(text(2, "actor_user_id"))
	a.e.Action = text(3, "action")
	a.e.TargetID = text(4, "target_id")
	a.e.Outcome = text(5, "outcome")
	a.e.Detail = text(6, "detail")
	a.e.Seq, a.numbered = l.number(v[7], "seq")
	a.e.ChainKeyID, _ = l.text(v[8], "chain_key_id", true)
	if v[8] != nil && a.e.ChainKeyID == "" {
		l.note("chain_key_id is empty, not NULL")
	}
	a.e.Hash = hexHash(l.bytes(v[9], "hash"))
	if v[9] != nil && a.e.Hash == "" {
		a.e.Hash = "-" // an empty link is no link and no absence of one: malformed
	}
	a.bad = l.faults()
	return a, nil
}

// scanner is a row to scan: *sql.Row, *sql.Rows, sqltx's.
type scanner interface{ Scan(dest ...any) error }
