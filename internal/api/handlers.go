package api

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"backoffice/internal/domain"
	"backoffice/internal/secrets"
)

// Every handler follows the contract's order of checks: authentication (done before it runs),
// parameter syntax (400), permission (403), existence and visibility (404), state (409).

// SAMLogStore is what the SAM action log list needs.
type SAMLogStore interface {
	// ListVisibleSAMActionLogs returns a page of the entity's logs and their total when the
	// scope may see the entity (visible), checked in the same statement as the page.
	ListVisibleSAMActionLogs(ctx context.Context, scope domain.Scope, entity domain.ID, page, size int64) (logs []domain.SAMActionLog, total int64, visible bool, err error)
}

func handleListSAMActionLogs(st SAMLogStore, bodies *keptBodies[samPageKey, samPage]) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, actor domain.Actor) error {
		entity, err := pathID(r, "entityId")
		if err != nil {
			return err
		}
		page, err := pageFromQuery(r)
		if err != nil {
			return err
		}
		if err := require(actor, domain.PermReadSAMActionLogs); err != nil {
			return err
		}
		logs, total, visible, err := st.ListVisibleSAMActionLogs(r.Context(), actor.Scope(), entity, page.Number, page.Size)
		if err != nil {
			return err
		}
		if !visible {
			return domain.NotFound("entity " + entity.String())
		}
		meta := newMeta(page, total)
		body, err := bodies.body(samPageKey{entity: entity, page: meta.Page, size: meta.PerPage}, samPage{meta: meta, logs: logs})
		if err != nil {
			return err
		}
		writeBody(w, http.StatusOK, body)
		return nil
	}
}

// samLogJSON is a SAM action log as the contract writes it, its date already formatted: given a
// time.Time, encoding/json calls its MarshalJSON and then compacts what that wrote, about a
// quarter of a page's encoding (BenchmarkEncode). The bytes are domain.SAMActionLog's
// (TestSAMLogJSONIsTheRecordsEncoding).
type samLogJSON struct {
	ID         domain.ID `json:"id"`
	EntityID   domain.ID `json:"entityId"`
	Action     string    `json:"action"`
	ActionDate string    `json:"actionDate"`
	SamID      int64     `json:"samId"`
}

func samLogsJSON(logs []domain.SAMActionLog) []samLogJSON {
	if logs == nil {
		return nil // encoded as null, as before
	}
	out := make([]samLogJSON, len(logs))
	for i, l := range logs {
		out[i] = samLogJSON{ID: l.ID, EntityID: l.EntityID, Action: l.Action, ActionDate: l.ActionDate.Format(time.RFC3339Nano), SamID: l.SamID}
	}
	return out
}

// AcceptanceStore is what the service acceptance read needs.
type AcceptanceStore interface {
	ServiceAcceptance(ctx context.Context, scope domain.Scope, leadID domain.ID) (domain.ServiceAcceptance, error)
}

func handleServiceAcceptance(st AcceptanceStore, bodies *keptBodies[domain.ID, domain.ServiceAcceptance]) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, actor domain.Actor) error {
		lead, err := pathID(r, "leadId")
		if err != nil {
			return err
		}
		if err := require(actor, domain.PermReadServiceAcceptance); err != nil {
			return err
		}
		sa, err := st.ServiceAcceptance(r.Context(), actor.Scope(), lead)
		if isNotFound(err) {
			return domain.NotFound("lead " + lead.String())
		}
		if err != nil {
			return err
		}
		body, err := bodies.body(lead, sa)
		if err != nil {
			return err
		}
		writeBody(w, http.StatusOK, body)
		return nil
	}
}

// DecryptStore is what the principal decryption needs.
type DecryptStore interface {
	PrincipalSSN(ctx context.Context, scope domain.Scope, leadID, principalID domain.ID) (domain.SealedSSN, error)
	RecordAudit(ctx context.Context, e domain.AuditEvent) error
}

const decryptAction = "principal.decrypt"

// handleDecrypt answers the one operation that discloses an SSN. Every authenticated attempt is
// audited, and a granted one only after its audit event is stored: no disclosure goes unrecorded.
func handleDecrypt(st DecryptStore, ring secrets.Opener, now func() time.Time, m Observer, log *slog.Logger) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, actor domain.Actor) error {
		ssn, err := decrypt(log, r, st, ring, actor)
		event := domain.AuditEvent{At: now(), ActorUserID: actor.UserID, Action: decryptAction,
			TargetID: auditID(r.PathValue("principalId")), Outcome: outcomeOf(err), Detail: "field " + auditField(r.PathValue("field"))}
		if auditErr := st.RecordAudit(r.Context(), event); auditErr != nil {
			m.ObserveDecrypt("audit_failed")
			return fmt.Errorf("audit of decrypt: %w", auditErr)
		}
		m.ObserveDecrypt(event.Outcome)
		if err != nil {
			return err
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, struct {
			SSN string `json:"ssn"`
		}{ssn.Reveal()})
		return nil
	}
}

func decrypt(log *slog.Logger, r *http.Request, st DecryptStore, ring secrets.Opener, actor domain.Actor) (domain.SSN, error) {
	lead, err := pathID(r, "leadId")
	if err != nil {
		return domain.SSN{}, err
	}
	principal, err := pathID(r, "principalId")
	if err != nil {
		return domain.SSN{}, err
	}
	if field := r.PathValue("field"); field != "ssn" {
		e := domain.Errorf(domain.KindInvalid, "unsupported_field", "field %q cannot be decrypted; supported: ssn", auditTarget(field))
		e.Parameter = "field"
		return domain.SSN{}, e
	}
	if err := require(actor, domain.PermDecryptPrincipals); err != nil {
		return domain.SSN{}, err
	}
	sealed, err := st.PrincipalSSN(r.Context(), actor.Scope(), lead, principal)
	if isNotFound(err) {
		return domain.SSN{}, domain.NotFound("principal " + principal.String() + " of lead " + lead.String())
	}
	if err != nil {
		return domain.SSN{}, err
	}
	if !sealed.Found {
		return domain.SSN{}, domain.NotFound("an SSN for principal " + principal.String())
	}
	ssn, err := secrets.OpenSSN(ring, principal, sealed.KeyID, sealed.Sealed)
	if err != nil {
		// The key id is safe to log; it names a key, never reveals it.
		log.ErrorContext(r.Context(), "ssn does not open", slog.String("principal", principal.String()), slog.String("key_id", sealed.KeyID))
		return domain.SSN{}, fmt.Errorf("principal %s: %w", principal, err)
	}
	return ssn, nil
}

// outcomeOf names an attempt's result for the audit trail. A failure of our own (a key missing
// from the ring, say) withheld the value, so it is recorded as denied.
func outcomeOf(err error) string {
	if err == nil {
		return domain.OutcomeGranted
	}
	if e, ok := domain.AsError(err); ok {
		switch e.Kind {
		case domain.KindInvalid:
			return domain.OutcomeInvalid
		case domain.KindNotFound:
			return domain.OutcomeNotFound
		}
	}
	return domain.OutcomeDenied
}

// auditID is a path value that names an object, as the trail keeps it: as given when it is a
// uuid (its 36 hex digits and hyphens are already fit for the trail), else only its length. What
// a client writes in an id's place is anything (an SSN typed into the wrong field, say), and the
// trail keeps it for good.
func auditID(s string) string {
	if _, err := domain.ParseID(s); err == nil {
		return s
	}
	return fmt.Sprintf("(not a uuid, %d bytes)", len(s))
}

// auditField is decrypt's field as the trail keeps it: a field it decrypts by name, any other by
// its length only (see auditID).
func auditField(s string) string {
	if s == "ssn" {
		return s
	}
	return fmt.Sprintf("(unsupported, %d bytes)", len(s))
}

// auditTarget keeps a raw path value fit for the audit trail: valid UTF-8 without control
// characters (each becomes U+FFFD: PostgreSQL stores no NUL, and a trail copied or exported from
// SQLite must import there), bounded.
func auditTarget(s string) string {
	if !utf8.ValidString(s) {
		s = "(invalid utf-8)"
	}
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return utf8.RuneError
		}
		return r
	}, s)
	if len(s) > 64 {
		s = s[:64]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}

// DocumentStore is what the document deletion needs.
type DocumentStore interface {
	DeleteMerchantDocument(ctx context.Context, scope domain.Scope, merchantID, documentID domain.ID, event domain.AuditEvent) error
	// DeleteMerchantDocumentOnce deletes under the caller's Idempotency-Key: a repeat of the key
	// replays the deletion (replayed true); a key given another request is domain.ErrKeyReused.
	DeleteMerchantDocumentOnce(ctx context.Context, scope domain.Scope, merchantID, documentID domain.ID, event domain.AuditEvent, key domain.KeyUse) (replayed bool, err error)
	RecordAudit(ctx context.Context, e domain.AuditEvent) error
}

const deleteDocumentAction = "merchant_document.delete"

// handleDeleteDocument deletes a document. With an Idempotency-Key the deletion is kept under the
// key, so that a caller who repeats it (its first answer lost) learns that its own request
// deleted the document (204, Idempotent-Replayed) instead of a 404 it could not tell from a
// wrong id.
func handleDeleteDocument(st DocumentStore, now func() time.Time) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, actor domain.Actor) error {
		at := now()
		event := domain.AuditEvent{At: at, ActorUserID: actor.UserID, Action: deleteDocumentAction,
			TargetID: auditID(r.PathValue("documentId")), Detail: "merchant " + auditID(r.PathValue("merchantId"))}
		merchant, document, key, err := documentParams(r, actor)
		if err != nil {
			event.Outcome = outcomeOf(err)
			return errors.Join(err, st.RecordAudit(r.Context(), event))
		}
		replayed := false
		if key == "" {
			err = st.DeleteMerchantDocument(r.Context(), actor.Scope(), merchant, document, event)
		} else {
			hash := sha256.Sum256([]byte(key))
			replayed, err = st.DeleteMerchantDocumentOnce(r.Context(), actor.Scope(), merchant, document, event,
				domain.KeyUse{User: actor.UserID, Hash: hash[:], Now: at, KeepUntil: at.Add(keptFor)})
		}
		switch {
		case errors.Is(err, domain.ErrKeyReused):
			return errKeyReused
		case isNotFound(err):
			return domain.NotFound("document " + document.String() + " of merchant " + merchant.String())
		case err != nil:
			return err
		}
		if replayed {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
}

// documentParams checks a deletion's request in the contract's order: the ids and the
// Idempotency-Key (400), then the permission (403).
func documentParams(r *http.Request, actor domain.Actor) (merchant, document domain.ID, key string, err error) {
	if merchant, err = pathID(r, "merchantId"); err != nil {
		return
	}
	if document, err = pathID(r, "documentId"); err != nil {
		return
	}
	if key, err = idempotencyKey(r); err != nil {
		return
	}
	err = require(actor, domain.PermDeleteMerchantDocuments)
	return
}

// Pusher runs operation 4.1.
type Pusher interface {
	// Push pushes; callerKey is the caller's Idempotency-Key or "".
	Push(ctx context.Context, actor domain.Actor, orderID, lineItemID domain.ID, callerKey string) (*domain.LineItemView, error)
	// Lease is how long one push may run, at most.
	Lease() time.Duration
	// Remaining is how long a push whose lease (or key claim) expires at until may still run.
	Remaining(until time.Time) time.Duration
}

func handlePush(p Pusher, keys PushKeyStore, now func() time.Time, log *slog.Logger) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, actor domain.Actor) error {
		order, err := pathID(r, "orderId")
		if err != nil {
			return err
		}
		item, err := pathID(r, "lineItemId")
		if err != nil {
			return err
		}
		key, err := idempotencyKey(r)
		if err != nil {
			return err
		}
		if err := require(actor, domain.PermPushDeviceParameters); err != nil {
			return err
		}
		if key != "" {
			return pushOnce(log, w, r, p, keys, now, actor, order, item, key)
		}
		return runPush(w, r, p, actor, order, item, "")
	}
}

func runPush(w http.ResponseWriter, r *http.Request, p Pusher, actor domain.Actor, order, item domain.ID, key string) error {
	view, err := p.Push(r.Context(), actor, order, item, key)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, view)
	return nil
}
