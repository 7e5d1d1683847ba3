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

// tracedBackend is every store method the handlers and the push service call.
type tracedBackend interface {
	api.Store
	api.Health
	push.Store
}

// tracedStore gives each store call of a request a span named after the method. It records which
// call it was, on which engine, and whether it failed: never an argument (ids, hashes of keys,
// sealed SSNs) and never an error's text, which may quote them. NoteAPIKeyUse, which returns at
// once and writes later outside the request, gets none.
type tracedStore struct {
	tracedBackend
	tracer trace.Tracer
	system attribute.KeyValue
}

func newTracedStore(st *store.Store, tp trace.TracerProvider) *tracedStore {
	system := semconv.DBSystemNameSQLite
	if st.Engine() == "postgres" {
		system = semconv.DBSystemNamePostgreSQL
	}
	return &tracedStore{tracedBackend: st, tracer: tp.Tracer("backoffice/internal/store"), system: system}
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
	c, err := s.tracedBackend.Credential(ctx, kind, hash)
	end(span, err)
	return c, err
}

func (s *tracedStore) ListVisibleSAMActionLogs(ctx context.Context, scope domain.Scope, entity domain.ID, page, size int64) ([]domain.SAMActionLog, int64, bool, error) {
	ctx, span := s.start(ctx, "ListVisibleSAMActionLogs")
	logs, total, visible, err := s.tracedBackend.ListVisibleSAMActionLogs(ctx, scope, entity, page, size)
	end(span, err)
	return logs, total, visible, err
}

func (s *tracedStore) ServiceAcceptance(ctx context.Context, scope domain.Scope, leadID domain.ID) (domain.ServiceAcceptance, error) {
	ctx, span := s.start(ctx, "ServiceAcceptance")
	sa, err := s.tracedBackend.ServiceAcceptance(ctx, scope, leadID)
	end(span, err)
	return sa, err
}

func (s *tracedStore) PrincipalSSN(ctx context.Context, scope domain.Scope, leadID, principalID domain.ID) (domain.SealedSSN, error) {
	ctx, span := s.start(ctx, "PrincipalSSN")
	sealed, err := s.tracedBackend.PrincipalSSN(ctx, scope, leadID, principalID)
	end(span, err)
	return sealed, err
}

func (s *tracedStore) RecordAudit(ctx context.Context, e domain.AuditEvent) error {
	ctx, span := s.start(ctx, "RecordAudit")
	err := s.tracedBackend.RecordAudit(ctx, e)
	end(span, err)
	return err
}

func (s *tracedStore) DeleteMerchantDocument(ctx context.Context, scope domain.Scope, merchantID, documentID domain.ID, event domain.AuditEvent) error {
	ctx, span := s.start(ctx, "DeleteMerchantDocument")
	err := s.tracedBackend.DeleteMerchantDocument(ctx, scope, merchantID, documentID, event)
	end(span, err)
	return err
}

func (s *tracedStore) PushSource(ctx context.Context, scope domain.Scope, orderID, lineItemID domain.ID) (*domain.PushSource, error) {
	ctx, span := s.start(ctx, "PushSource")
	src, err := s.tracedBackend.PushSource(ctx, scope, orderID, lineItemID)
	end(span, err)
	return src, err
}

func (s *tracedStore) AcquirePushLease(ctx context.Context, lineItemID domain.ID, holder string, ttl time.Duration) (bool, error) {
	ctx, span := s.start(ctx, "AcquirePushLease")
	ok, err := s.tracedBackend.AcquirePushLease(ctx, lineItemID, holder, ttl)
	end(span, err)
	return ok, err
}

func (s *tracedStore) ReleasePushLease(ctx context.Context, lineItemID domain.ID, holder string) error {
	ctx, span := s.start(ctx, "ReleasePushLease")
	err := s.tracedBackend.ReleasePushLease(ctx, lineItemID, holder)
	end(span, err)
	return err
}

func (s *tracedStore) BeginPush(ctx context.Context, r domain.PushRecord, noteOf func(domain.PushRecord) domain.MerchantNote) error {
	ctx, span := s.start(ctx, "BeginPush")
	err := s.tracedBackend.BeginPush(ctx, r, noteOf)
	end(span, err)
	return err
}

func (s *tracedStore) CountPushAttempt(ctx context.Context, lineItemID domain.ID, holder string) error {
	ctx, span := s.start(ctx, "CountPushAttempt")
	err := s.tracedBackend.CountPushAttempt(ctx, lineItemID, holder)
	end(span, err)
	return err
}

func (s *tracedStore) FinishPush(ctx context.Context, lineItemID domain.ID, holder string, note domain.MerchantNote) (bool, error) {
	ctx, span := s.start(ctx, "FinishPush")
	noted, err := s.tracedBackend.FinishPush(ctx, lineItemID, holder, note)
	end(span, err)
	return noted, err
}
