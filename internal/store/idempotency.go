package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/store/column"
)

// ClaimPushKey claims a user's idempotency key for a push of a line item at now. A key that is
// free (never used, its kept answer expired, or its first request gone past runningFor without
// finishing) becomes this request's for runningFor. Expired keys are deleted on the way.
//
// Replicas racing for the same key get one KeyNew between them: the INSERT skips a taken key.
func (s *Store) ClaimPushKey(ctx context.Context, user domain.ID, keyHash []byte, lineItem domain.ID, now time.Time, runningFor time.Duration) (domain.KeyClaim, error) {
	if _, err := s.q().Exec(ctx, `DELETE FROM push_idempotency WHERE expires_at <= ?`, column.Micros(now)); err != nil {
		return domain.KeyClaim{}, fmt.Errorf("store: expire idempotency keys: %w", err)
	}
	until := column.Micros(now.Add(runningFor))
	head, tail := s.engine.InsertOrSkip()
	res, err := s.q().Exec(ctx, head+` push_idempotency (user_id, key_hash, line_item_id, expires_at) VALUES (?, ?, ?, ?)`+tail,
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
	err = s.q().QueryRow(ctx, `SELECT line_item_id, status, body, expires_at FROM push_idempotency WHERE user_id = ? AND key_hash = ?`,
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
	_, err := s.q().Exec(ctx, `UPDATE push_idempotency SET status = ?, body = ?, expires_at = ? WHERE user_id = ? AND key_hash = ?`,
		status, body, column.Micros(keepUntil), user, keyHash)
	if err != nil {
		return fmt.Errorf("store: keep idempotent answer: %w", err)
	}
	return nil
}

// ReleasePushKey frees a claimed key whose request ended without an answer worth keeping, so
// that a retry runs anew.
func (s *Store) ReleasePushKey(ctx context.Context, user domain.ID, keyHash []byte) error {
	_, err := s.q().Exec(ctx, `DELETE FROM push_idempotency WHERE user_id = ? AND key_hash = ? AND status IS NULL`, user, keyHash)
	if err != nil {
		return fmt.Errorf("store: release idempotency key: %w", err)
	}
	return nil
}
