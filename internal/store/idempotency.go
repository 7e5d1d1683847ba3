package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"time"

	"backoffice/internal/column"
	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// ClaimPushKey claims a user's idempotency key for a push of a line item at now. A key that is
// free (never used, its kept answer expired, or its first request gone past runningFor without
// finishing) becomes this request's for runningFor. Expired keys are deleted on the way.
//
// Replicas racing for the same key get one KeyNew between them: the INSERT skips a taken key.
func (s *Store) ClaimPushKey(ctx context.Context, user domain.ID, keyHash []byte, lineItem domain.ID, now time.Time, runningFor time.Duration) (domain.KeyClaim, error) {
	if _, err := s.pool.Exec(ctx, `DELETE FROM push_idempotency WHERE expires_at <= ?`, column.Micros(now)); err != nil {
		return domain.KeyClaim{}, fmt.Errorf("store: expire idempotency keys: %w", err)
	}
	until := column.Micros(now.Add(runningFor))
	head, tail := s.engine.InsertOrSkip()
	res, err := s.pool.Exec(ctx, head+` push_idempotency (user_id, key_hash, line_item_id, expires_at) VALUES (?, ?, ?, ?)`+tail,
		user, keyHash, lineItem, until)
	if err != nil {
		return domain.KeyClaim{}, fmt.Errorf("store: claim idempotency key: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return domain.KeyClaim{}, fmt.Errorf("store: claim idempotency key: %w", err)
	} else if n == 1 {
		return domain.KeyClaim{State: domain.KeyNew}, nil
	}
	var item domain.ID
	var status sql.NullInt64
	var body []byte
	var expires int64
	err = s.pool.QueryRow(ctx, `SELECT line_item_id, status, body, expires_at FROM push_idempotency WHERE user_id = ? AND key_hash = ?`,
		user, keyHash).Scan(&item, &status, &body, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		// The key expired, and another claim swept it away, between the insert and this read.
		return s.ClaimPushKey(ctx, user, keyHash, lineItem, now, runningFor)
	}
	if err != nil {
		return domain.KeyClaim{}, fmt.Errorf("store: read idempotency key: %w", err)
	}
	switch {
	case item != lineItem:
		return domain.KeyClaim{State: domain.KeyReused}, nil
	case status.Valid:
		return domain.KeyClaim{State: domain.KeyDone, Status: int(status.Int64), Body: body}, nil
	default:
		return domain.KeyClaim{State: domain.KeyRunning, RunningUntil: column.FromMicros(expires)}, nil
	}
}

// FinishPushKey keeps a claimed key's answer until keepUntil.
func (s *Store) FinishPushKey(ctx context.Context, user domain.ID, keyHash []byte, status int, body []byte, keepUntil time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE push_idempotency SET status = ?, body = ?, expires_at = ? WHERE user_id = ? AND key_hash = ?`,
		status, body, column.Micros(keepUntil), user, keyHash)
	if err != nil {
		return fmt.Errorf("store: keep idempotent answer: %w", err)
	}
	return nil
}

// ReleasePushKey frees a claimed key whose request ended without an answer worth keeping, so
// that a retry runs anew.
func (s *Store) ReleasePushKey(ctx context.Context, user domain.ID, keyHash []byte) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM push_idempotency WHERE user_id = ? AND key_hash = ? AND status IS NULL`, user, keyHash)
	if err != nil {
		return fmt.Errorf("store: release idempotency key: %w", err)
	}
	return nil
}

// The table push_idempotency keeps every Idempotency-Key; it took its name when pushes alone took
// keys. Its line_item_id column holds what the key's first request acted on: a line item's id
// for a push, documentKeyTarget for a deletion. A key is one request: its user's next use of it
// for anything else is refused as reused.

// documentKeyTarget is what a deletion's key is kept for: the document under its merchant. It can
// be no line item's id (it is not a uuid).
func documentKeyTarget(merchantID, documentID domain.ID) string {
	return "merchant_document " + string(merchantID) + " " + string(documentID)
}

// keyState is what a deletion's claim of its key found.
type keyState int

const (
	keyClaimed      keyState = iota + 1 // the key is this request's
	keyDeleted                          // the key's request deleted this very target
	keyOtherRequest                     // the key was given another request
)

// claimKeyFor claims a key for a request answered in the claim's own transaction (a deletion):
// the row is written with the answer it will keep, and stands only if the transaction commits.
// A concurrent claim of the same key waits on the row until this transaction ends. head and tail
// are the engine's InsertOrSkip.
func claimKeyFor(ctx context.Context, q *sqltx.Tx, head, tail string, key domain.KeyUse, target string) (keyState, error) {
	if _, err := q.Exec(ctx, `DELETE FROM push_idempotency WHERE expires_at <= ?`, column.Micros(key.Now)); err != nil {
		return 0, fmt.Errorf("store: expire idempotency keys: %w", err)
	}
	res, err := q.Exec(ctx, head+` push_idempotency (user_id, key_hash, line_item_id, status, body, expires_at) VALUES (?, ?, ?, ?, ?, ?)`+tail,
		key.User, key.Hash, target, http.StatusNoContent, []byte{}, column.Micros(key.KeepUntil))
	if err != nil {
		return 0, fmt.Errorf("store: claim idempotency key: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, fmt.Errorf("store: claim idempotency key: %w", err)
	} else if n == 1 {
		return keyClaimed, nil
	}
	var kept string
	var status sql.NullInt64
	err = q.QueryRow(ctx, `SELECT line_item_id, status FROM push_idempotency WHERE user_id = ? AND key_hash = ?`, key.User, key.Hash).Scan(&kept, &status)
	if err != nil {
		return 0, fmt.Errorf("store: read idempotency key: %w", err)
	}
	if kept != target || !status.Valid {
		return keyOtherRequest, nil
	}
	return keyDeleted, nil
}

// forgetKey drops a key claimed in this transaction whose request has nothing to keep.
func forgetKey(ctx context.Context, q *sqltx.Tx, key domain.KeyUse) error {
	if _, err := q.Exec(ctx, `DELETE FROM push_idempotency WHERE user_id = ? AND key_hash = ?`, key.User, key.Hash); err != nil {
		return fmt.Errorf("store: forget idempotency key: %w", err)
	}
	return nil
}
