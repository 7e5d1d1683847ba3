package store

import (
	"context"
	"fmt"

	"backoffice/internal/auditlog"
	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// DeleteMerchantDocument removes a document of a merchant visible to the scope, content and all,
// and writes the audit event in the same transaction: the deletion and its record stand or fall
// together. The event's outcome is set here from what happened.
func (s *Store) DeleteMerchantDocument(ctx context.Context, scope domain.Scope, merchantID, documentID domain.ID, event domain.AuditEvent) error {
	var found bool
	chain := s.trailLog.Chain()
	err := s.pool.Tx(ctx, func(q *sqltx.Tx) error {
		var err error
		found, err = deleteDocument(ctx, q, scope, merchantID, documentID)
		if err != nil {
			return err
		}
		event.Outcome = domain.OutcomeGranted
		if !found {
			event.Outcome = domain.OutcomeNotFound
		}
		return insertAudit(ctx, chain, q, event)
	})
	if err != nil {
		return err
	}
	if !found {
		return errNotFound
	}
	s.purgeDeleted(ctx)
	return nil
}

// DeleteMerchantDocumentOnce is DeleteMerchantDocument under the caller's Idempotency-Key. The
// key, the deletion and the audit event are one transaction: a deletion is kept under its key
// (until key.KeepUntil) exactly when it is committed, so a repeat of the key by the same user
// replays it (replayed true, the event recorded as granted again with "replayed" in its detail)
// instead of finding the document gone. A concurrent repeat waits for the first to commit and
// replays it. A key its user gave another request (another document, or a push) is
// domain.ErrKeyReused, recorded as denied. A deletion that found nothing keeps no key.
func (s *Store) DeleteMerchantDocumentOnce(ctx context.Context, scope domain.Scope, merchantID, documentID domain.ID, event domain.AuditEvent, key domain.KeyUse) (replayed bool, err error) {
	var found, reused bool
	chain := s.trailLog.Chain()
	target := documentKeyTarget(merchantID, documentID)
	insertOrSkip, skipTail := s.engine.InsertOrSkip()
	err = s.pool.Tx(ctx, func(q *sqltx.Tx) error {
		replayed, reused, found = false, false, false
		claimed, err := claimKeyFor(ctx, q, insertOrSkip, skipTail, key, target)
		if err != nil {
			return err
		}
		switch {
		case claimed == keyOtherRequest:
			reused = true
			event.Outcome = domain.OutcomeDenied
			event.Detail += "; Idempotency-Key used for another request"
		case claimed == keyDeleted:
			replayed = true
			event.Outcome = domain.OutcomeGranted
			event.Detail += "; replayed (Idempotency-Key)"
		default:
			if found, err = deleteDocument(ctx, q, scope, merchantID, documentID); err != nil {
				return err
			}
			event.Outcome = domain.OutcomeGranted
			if !found {
				event.Outcome = domain.OutcomeNotFound
				if err := forgetKey(ctx, q, key); err != nil {
					return err
				}
			}
		}
		return insertAudit(ctx, chain, q, event)
	})
	switch {
	case err != nil:
		return false, err
	case reused:
		return false, domain.ErrKeyReused
	case replayed:
		return true, nil
	case !found:
		return false, errNotFound
	}
	s.purgeDeleted(ctx)
	return false, nil
}

// purgeDeleted has the engine drop copies of deleted bytes it still keeps (SQLite's WAL). It
// returns at once: the request waits for no reader; the deletion itself is committed either way.
func (s *Store) purgeDeleted(ctx context.Context) {
	s.engine.PurgeDeleted(ctx, s.db)
}

func deleteDocument(ctx context.Context, q *sqltx.Tx, scope domain.Scope, merchantID, documentID domain.ID) (bool, error) {
	var partner string
	err := noRows(q.QueryRow(ctx, `SELECT partner_id FROM merchants WHERE id = ?`, merchantID).Scan(&partner))
	if err == errNotFound {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: merchant %s: %w", merchantID, err)
	}
	if !scope.Sees(domain.ID(partner)) {
		return false, nil
	}
	res, err := q.Exec(ctx, `DELETE FROM merchant_documents WHERE id = ? AND merchant_id = ?`, documentID, merchantID)
	if err != nil {
		return false, fmt.Errorf("store: delete document %s: %w", documentID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: delete document %s: %w", documentID, err)
	}
	return n == 1, nil
}

// insertAudit writes the event of a transaction that records its own (credentials, documents):
// chained like every other, in that transaction.
func insertAudit(ctx context.Context, c auditlog.Chain, q *sqltx.Tx, e domain.AuditEvent) error {
	return c.Append(ctx, q, []domain.AuditEvent{e})
}
