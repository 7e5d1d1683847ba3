package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"

	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/sqltx"
)

// Rekeyer opens a value under the key it names and seals under the active key; *secrets.Ring is
// one.
type Rekeyer interface {
	ActiveKeyID() string
	Open(keyID string, sealed, aad []byte) ([]byte, error)
	Seal(plaintext, aad []byte) (keyID string, sealed []byte)
}

// RewrapBatch is what one batch of RewrapSSNs did.
type RewrapBatch struct {
	// Last is the highest principal id the batch examined; the next batch starts after it.
	Last domain.ID
	// Seen counts the values examined: Moved to the active key, Changed by someone else between
	// the read and the write (left alone, for the next run), or Failed to open.
	Seen, Moved, Changed int
	Failed               []RewrapFailure
}

// RewrapFailure names a value that could not be opened (its key is not in the ring, or it does
// not authenticate where it is stored). The value stays as it is.
type RewrapFailure struct {
	PrincipalID domain.ID
	KeyID       string
	Err         error
}

// sealedSSN is one stored SSN, exactly as read: the write-back compares both fields.
type sealedSSN struct {
	principal domain.ID
	keyID     string
	sealed    []byte
}

// RewrapSSNs re-seals, in one short transaction, up to limit SSNs that are not under the ring's
// active key, taking principals in id order after the given id (empty: from the start). Each value
// is opened and sealed again bound to the same principal and field, and written back only if the
// row still holds exactly what was read: a concurrent change is never overwritten. A reader sees
// the old key id and ciphertext or the new pair, never a mix, since both are one row's update.
// Progress is the data itself: a later run simply finds fewer values to move.
func (s *Store) RewrapSSNs(ctx context.Context, ring Rekeyer, after domain.ID, limit int) (RewrapBatch, error) {
	var b RewrapBatch
	err := s.pool.Tx(ctx, func(q *sqltx.Tx) error {
		b = RewrapBatch{Last: after}
		values, err := sealedSSNsAfter(ctx, q, ring.ActiveKeyID(), after, limit)
		if err != nil {
			return err
		}
		for _, v := range values {
			if err := b.rewrap(ctx, q, ring, v); err != nil {
				return err
			}
		}
		return nil
	})
	return b, err
}

// sealedSSNsAfter reads the next values not under the active key. It reads them all before any
// update, since a connection cannot write while a result set is open on it (PostgreSQL).
func sealedSSNsAfter(ctx context.Context, q *sqltx.Tx, active string, after domain.ID, limit int) ([]sealedSSN, error) {
	rows, err := q.Query(ctx, `SELECT id, ssn_key_id, ssn_sealed FROM principals
WHERE id > ? AND ssn_key_id IS NOT NULL AND ssn_key_id <> ? ORDER BY id LIMIT ?`, after, active, limit)
	if err != nil {
		return nil, fmt.Errorf("store: rewrap: %w", err)
	}
	defer rows.Close()
	var out []sealedSSN
	for rows.Next() {
		var v sealedSSN
		if err := rows.Scan(&v.principal, &v.keyID, &v.sealed); err != nil {
			return nil, fmt.Errorf("store: rewrap: %w", err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// rewrap moves one value to the active key. Only a database error is returned; a value that does
// not open is recorded as a failure and left as it is.
func (b *RewrapBatch) rewrap(ctx context.Context, q *sqltx.Tx, ring Rekeyer, v sealedSSN) error {
	b.Last, b.Seen = v.principal, b.Seen+1
	ssn, err := secrets.OpenSSN(ring, v.principal, v.keyID, v.sealed)
	if err != nil {
		b.Failed = append(b.Failed, RewrapFailure{PrincipalID: v.principal, KeyID: v.keyID, Err: err})
		return nil
	}
	keyID, sealed := secrets.SealSSN(ring, v.principal, ssn.Reveal())
	res, err := q.Exec(ctx, `UPDATE principals SET ssn_key_id = ?, ssn_sealed = ? WHERE id = ? AND ssn_key_id = ? AND ssn_sealed = ?`,
		keyID, sealed, v.principal, v.keyID, v.sealed)
	if err != nil {
		return fmt.Errorf("store: rewrap principal %s: %w", v.principal, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: rewrap principal %s: %w", v.principal, err)
	}
	if n != 1 {
		b.Changed++
		return nil
	}
	if err := rewrapLanded(ctx, q, sealedSSN{principal: v.principal, keyID: keyID, sealed: sealed}); err != nil {
		return err
	}
	b.Moved++
	return nil
}

// rewrapLanded reads w's row back in q and fails unless it holds w exactly: a value counted as
// moved lets the old key go (keys status), so one that a trigger or a rule altered on its way
// must fail the batch, rolled back, instead.
func rewrapLanded(ctx context.Context, q *sqltx.Tx, w sealedSSN) error {
	var keyID sql.NullString
	var sealed []byte
	err := q.QueryRow(ctx, `SELECT ssn_key_id, ssn_sealed FROM principals WHERE id = ?`, w.principal).Scan(&keyID, &sealed)
	if err != nil {
		return fmt.Errorf("store: rewrap principal %s: read back: %w", w.principal, err)
	}
	if keyID.String != w.keyID || !bytes.Equal(sealed, w.sealed) {
		return fmt.Errorf("store: rewrap principal %s: the new seal did not read back as written, so the batch was rolled back (something in the database alters writes to principals: a trigger, a rule or a view in its place)", w.principal)
	}
	return nil
}

// KeyCount is how many stored SSNs are sealed under one key id.
type KeyCount struct {
	KeyID  string
	Values int64
}

// SSNKeyCounts counts stored SSNs per key id, in key id order.
func (s *Store) SSNKeyCounts(ctx context.Context) ([]KeyCount, error) {
	rows, err := s.pool.Query(ctx, `SELECT ssn_key_id, count(*) FROM principals WHERE ssn_key_id IS NOT NULL GROUP BY ssn_key_id ORDER BY ssn_key_id`)
	if err != nil {
		return nil, fmt.Errorf("store: ssn key counts: %w", err)
	}
	defer rows.Close()
	var out []KeyCount
	for rows.Next() {
		var c KeyCount
		var id sql.NullString
		if err := rows.Scan(&id, &c.Values); err != nil {
			return nil, fmt.Errorf("store: ssn key counts: %w", err)
		}
		c.KeyID = id.String
		out = append(out, c)
	}
	return out, rows.Err()
}
