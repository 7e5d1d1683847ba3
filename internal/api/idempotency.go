package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"time"

	"backoffice/internal/domain"
)

// An idempotent push: a caller whose push timed out on its side may send it again with the same
// Idempotency-Key. The first request with a key runs; its answer is kept for keptFor, and a repeat
// by the same user (on any replica) gets that answer back, marked Idempotent-Replayed, without a
// second gateway call or note. Keys belong to the user who sent them, and a key names one
// request: the document deletion takes keys too (handleDeleteDocument), from the same table.

// errKeyReused answers a key its user already gave another request: another line item's push, or
// a deletion.
var errKeyReused = domain.Conflict("idempotency_key_reused", "this Idempotency-Key was used for another request; use a new key for a new request")

// keptFor is how long an answer is kept for repeats of its key.
const keptFor = 24 * time.Hour

// maxIdempotencyKey bounds a key's length.
const maxIdempotencyKey = 255

// PushKeyStore keeps idempotency keys and their answers; *store.Store is one.
type PushKeyStore interface {
	ClaimPushKey(ctx context.Context, user domain.ID, keyHash []byte, lineItem domain.ID, now time.Time, runningFor time.Duration) (domain.KeyClaim, error)
	FinishPushKey(ctx context.Context, user domain.ID, keyHash []byte, status int, body []byte, keepUntil time.Time) error
	ReleasePushKey(ctx context.Context, user domain.ID, keyHash []byte) error
}

// idempotencyKey reads the Idempotency-Key header: absent is "", and a present key must be 1 to
// 255 printable ASCII characters, sent once.
func idempotencyKey(r *http.Request) (string, error) {
	values := r.Header.Values("Idempotency-Key")
	switch {
	case len(values) == 0:
		return "", nil
	case len(values) > 1:
		return "", domain.InvalidParameter("Idempotency-Key", "send it once")
	}
	key := values[0]
	if len(key) == 0 || len(key) > maxIdempotencyKey {
		return "", domain.InvalidParameter("Idempotency-Key", "must be 1 to 255 characters")
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return "", domain.InvalidParameter("Idempotency-Key", "must be printable ASCII")
		}
	}
	return key, nil
}

// pushOnce runs a push under the caller's key: the kept answer of an earlier request with it, or
// this request's own, kept for the next.
func pushOnce(log *slog.Logger, w http.ResponseWriter, r *http.Request, p Pusher, keys PushKeyStore, now func() time.Time, actor domain.Actor, order, item domain.ID, key string) error {
	hash := sha256.Sum256([]byte(key))
	claim, err := keys.ClaimPushKey(r.Context(), actor.UserID, hash[:], item, now(), p.Lease())
	if err != nil {
		return err
	}
	switch claim.State {
	case domain.KeyDone:
		w.Header().Set("Idempotent-Replayed", "true")
		writeBody(w, claim.Status, claim.Body)
		return nil
	case domain.KeyRunning:
		e := domain.Conflict("push_in_progress", "a push with this Idempotency-Key is still running; try again when it has finished")
		e.RetryAfter = p.Remaining(claim.RunningUntil)
		return e
	case domain.KeyReused:
		return errKeyReused
	}
	rec := &recording{header: http.Header{}}
	err = runPush(rec, r, p, actor, order, item, key)
	if err != nil {
		writeError(log, rec, r, err)
	}
	// The answer is settled even if the caller went away: the next repeat must find it.
	settle := context.WithoutCancel(r.Context())
	if worthKeeping(err) {
		err = keys.FinishPushKey(settle, actor.UserID, hash[:], rec.status, rec.body.Bytes(), now().Add(keptFor))
	} else {
		err = keys.ReleasePushKey(settle, actor.UserID, hash[:])
	}
	if err != nil {
		log.ErrorContext(settle, "idempotency key not settled; a repeat may run the push again", "error", err.Error())
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.status)
	_, _ = w.Write(rec.body.Bytes())
	return nil
}

// worthKeeping tells an answer a repeat must get from one it must not: a failure of our own (500)
// or of the database (503), or another push of the line item running, says nothing about this
// push, so a repeat runs it anew. A 502 is kept: the push was tried and noted.
func worthKeeping(err error) bool {
	if err == nil {
		return true
	}
	e, ok := appError(err)
	return ok && e.Kind != domain.KindInternal && e.Kind != domain.KindUnavailable && e.Code != "push_in_progress"
}

// recording is a response held back until it is kept.
type recording struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (rec *recording) Header() http.Header { return rec.header }
func (rec *recording) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
}
func (rec *recording) Write(b []byte) (int, error) {
	rec.WriteHeader(http.StatusOK)
	return rec.body.Write(b)
}
