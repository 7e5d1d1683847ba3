package api

import (
	"net/http"

	"backoffice/internal/domain"
)

// CheckpointSource holds the audit log's latest signed checkpoint: a c2sp.org/tlog-checkpoint
// signed note (docs/compliance.md). ok is false while none has been signed.
type CheckpointSource interface {
	LatestCheckpoint() (note []byte, ok bool)
}

// auditCheckpointRoute serves the latest checkpoint; beside the tile routes under the same prefix.
const auditCheckpointRoute = "GET /v1/audit-log/checkpoint"

// handleAuditCheckpoint answers GET /v1/audit-log/checkpoint with the note as signed, to whoever
// may read the audit trail. Reading it is not recorded: it names no event, and recording every
// poll would add an event, and so outdate the checkpoint, at each poll.
func handleAuditCheckpoint(src CheckpointSource) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, actor domain.Actor) error {
		if err := mayReadAuditTrail(actor); err != nil {
			return err
		}
		var note []byte
		ok := false
		if src != nil {
			note, ok = src.LatestCheckpoint()
		}
		if !ok {
			return domain.Errorf(domain.KindNotFound, "not_found", "no checkpoint of the audit trail has been signed yet")
		}
		return writeNote(w, note)
	}
}

// writeNote answers a signed note as signed, as text, never cached: the next one replaces it.
func writeNote(w http.ResponseWriter, note []byte) error {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(note)
	return err
}
