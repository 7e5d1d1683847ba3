package app

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"backoffice/internal/api"
	"backoffice/internal/domain"
	"backoffice/internal/push"
	"backoffice/internal/store"
)

// tracedBackend is every store method the handlers and the push service call (/readyz asks the
// store itself).
type tracedBackend interface {
	api.Store
	push.Store
}

// tracedStore gives each store call of a request a span named after the method. It records which
// call it was, on which engine, and whether it failed: never an argument (ids, hashes of keys,
// sealed SSNs) and never an error's text, which may quote them. NoteAPIKeyUse, which returns at
// once and writes later outside the request, gets none.
//
// It spells out every method rather than embed the store, so that a method added to one of the
// interfaces fails to compile here until it is traced (or passed through on purpose).
type tracedStore struct {
	next   tracedBackend
	tracer trace.Tracer
	system attribute.KeyValue
}

var _ tracedBackend = (*tracedStore)(nil)

func newTracedStore(st *store.Store, tp trace.TracerProvider) *tracedStore {
	return &tracedStore{next: st, tracer: tp.Tracer("backoffice/internal/store"), system: semconv.DBSystemNameKey.String(st.DBSystem())}
}

func (s *tracedStore) start(ctx context.Context, method string) (context.Context, trace.Span) {
	return s.tracer.Start(ctx, "store."+method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(s.system, semconv.DBOperationName(method)))
}

// end marks a failed call and ends the span. Not found is an answer, not a failure.
func end(span trace.Span, err error) {
	defer span.End()
	switch {
	case err == nil, errors.Is(err, domain.ErrNotFound):
	case errors.Is(err, store.ErrUnavailable):
		span.SetAttributes(semconv.ErrorTypeKey.String("unavailable"))
		span.SetStatus(codes.Error, "the database is unavailable")
	default:
		span.SetAttributes(semconv.ErrorTypeOther)
		span.SetStatus(codes.Error, "")
	}
}

func (s *tracedStore) Credential(ctx context.Context, kind string, hash []byte) (domain.Credential, error) {
	ctx, span := s.start(ctx, "Credential")
	c, err := s.next.Credential(ctx, kind, hash)
	end(span, err)
	return c, err
}

func (s *tracedStore) Account(ctx context.Context, ref domain.UserRef) (domain.Account, error) {
	ctx, span := s.start(ctx, "Account")
	a, err := s.next.Account(ctx, ref)
	end(span, err)
	return a, err
}

func (s *tracedStore) ListVisibleSAMActionLogs(ctx context.Context, scope domain.Scope, entity domain.ID, page, size int64) ([]domain.SAMActionLog, int64, bool, error) {
	ctx, span := s.start(ctx, "ListVisibleSAMActionLogs")
	logs, total, visible, err := s.next.ListVisibleSAMActionLogs(ctx, scope, entity, page, size)
	end(span, err)
	return logs, total, visible, err
}

func (s *tracedStore) ServiceAcceptance(ctx context.Context, scope domain.Scope, leadID domain.ID) (domain.ServiceAcceptance, error) {
	ctx, span := s.start(ctx, "ServiceAcceptance")
	sa, err := s.next.ServiceAcceptance(ctx, scope, leadID)
	end(span, err)
	return sa, err
}

func (s *tracedStore) PrincipalSSN(ctx context.Context, scope domain.Scope, leadID, principalID domain.ID) (domain.SealedSSN, error) {
	ctx, span := s.start(ctx, "PrincipalSSN")
	sealed, err := s.next.PrincipalSSN(ctx, scope, leadID, principalID)
	end(span, err)
	return sealed, err
}

func (s *tracedStore) RecordAudit(ctx context.Context, e domain.AuditEvent) error {
	ctx, span := s.start(ctx, "RecordAudit")
	err := s.next.RecordAudit(ctx, e)
	end(span, err)
	return err
}

func (s *tracedStore) DeleteMerchantDocument(ctx context.Context, scope domain.Scope, merchantID, documentID domain.ID, event domain.AuditEvent) error {
	ctx, span := s.start(ctx, "DeleteMerchantDocument")
	err := s.next.DeleteMerchantDocument(ctx, scope, merchantID, documentID, event)
	end(span, err)
	return err
}

func (s *tracedStore) PushSource(ctx context.Context, scope domain.Scope, orderID, lineItemID domain.ID) (*domain.PushSource, error) {
	ctx, span := s.start(ctx, "PushSource")
	src, err := s.next.PushSource(ctx, scope, orderID, lineItemID)
	end(span, err)
	return src, err
}

func (s *tracedStore) AcquirePushLease(ctx context.Context, lineItemID domain.ID, holder string, now time.Time, ttl time.Duration) (bool, error) {
	ctx, span := s.start(ctx, "AcquirePushLease")
	ok, err := s.next.AcquirePushLease(ctx, lineItemID, holder, now, ttl)
	end(span, err)
	return ok, err
}

func (s *tracedStore) ReleasePushLease(ctx context.Context, lineItemID domain.ID, holder string) error {
	ctx, span := s.start(ctx, "ReleasePushLease")
	err := s.next.ReleasePushLease(ctx, lineItemID, holder)
	end(span, err)
	return err
}

func (s *tracedStore) BeginPush(ctx context.Context, r domain.PushRecord, noteOf func(domain.PushRecord) domain.MerchantNote) error {
	ctx, span := s.start(ctx, "BeginPush")
	err := s.next.BeginPush(ctx, r, noteOf)
	end(span, err)
	return err
}

func (s *tracedStore) CountPushAttempt(ctx context.Context, lineItemID domain.ID, holder string) error {
	ctx, span := s.start(ctx, "CountPushAttempt")
	err := s.next.CountPushAttempt(ctx, lineItemID, holder)
	end(span, err)
	return err
}

func (s *tracedStore) FinishPush(ctx context.Context, lineItemID domain.ID, holder string, note domain.MerchantNote) (bool, error) {
	ctx, span := s.start(ctx, "FinishPush")
	noted, err := s.next.FinishPush(ctx, lineItemID, holder, note)
	end(span, err)
	return noted, err
}

func (s *tracedStore) PushLeaseExpiry(ctx context.Context, lineItemID domain.ID) (time.Time, bool, error) {
	ctx, span := s.start(ctx, "PushLeaseExpiry")
	until, held, err := s.next.PushLeaseExpiry(ctx, lineItemID)
	end(span, err)
	return until, held, err
}

func (s *tracedStore) NoteAbandonedPushes(ctx context.Context, now time.Time, noteOf func(domain.PushRecord) domain.MerchantNote) (int, error) {
	ctx, span := s.start(ctx, "NoteAbandonedPushes")
	n, err := s.next.NoteAbandonedPushes(ctx, now, noteOf)
	end(span, err)
	return n, err
}

func (s *tracedStore) DeleteMerchantDocumentOnce(ctx context.Context, scope domain.Scope, merchantID, documentID domain.ID, event domain.AuditEvent, key domain.KeyUse) (bool, error) {
	ctx, span := s.start(ctx, "DeleteMerchantDocumentOnce")
	replayed, err := s.next.DeleteMerchantDocumentOnce(ctx, scope, merchantID, documentID, event, key)
	end(span, err)
	return replayed, err
}

func (s *tracedStore) ClaimPushKey(ctx context.Context, user domain.ID, keyHash []byte, lineItem domain.ID, now time.Time, runningFor time.Duration) (domain.KeyClaim, error) {
	ctx, span := s.start(ctx, "ClaimPushKey")
	claim, err := s.next.ClaimPushKey(ctx, user, keyHash, lineItem, now, runningFor)
	end(span, err)
	return claim, err
}

func (s *tracedStore) FinishPushKey(ctx context.Context, user domain.ID, keyHash []byte, status int, body []byte, keepUntil time.Time) error {
	ctx, span := s.start(ctx, "FinishPushKey")
	err := s.next.FinishPushKey(ctx, user, keyHash, status, body, keepUntil)
	end(span, err)
	return err
}

func (s *tracedStore) ReleasePushKey(ctx context.Context, user domain.ID, keyHash []byte) error {
	ctx, span := s.start(ctx, "ReleasePushKey")
	err := s.next.ReleasePushKey(ctx, user, keyHash)
	end(span, err)
	return err
}

func (s *tracedStore) ListAuditEvents(ctx context.Context, f domain.AuditFilter, page, size int64) ([]domain.AuditEvent, int64, error) {
	ctx, span := s.start(ctx, "ListAuditEvents")
	events, total, err := s.next.ListAuditEvents(ctx, f, page, size)
	end(span, err)
	return events, total, err
}

// NoteAPIKeyUse returns at once and writes later, outside the request: no span.
func (s *tracedStore) NoteAPIKeyUse(id domain.ID, at time.Time, every time.Duration) {
	s.next.NoteAPIKeyUse(id, at, every)
}
