package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"
)

// readyTimeout bounds a readiness check: a database that does not answer in time is not ready.
const readyTimeout = 2 * time.Second

type healthBody struct {
	Status string `json:"status"`
	// AuditWitnesses is set on /readyz when checkpoints are sent to witnesses.
	AuditWitnesses *witnessLag `json:"auditWitnesses,omitempty"`
}

// witnessLag is how far the witnesses are behind the audit log's checkpoints.
type witnessLag struct {
	CheckpointSize int64 `json:"checkpointSize"`
	FinalSize      int64 `json:"finalSize"`
}

// WitnessStatus tells the newest audit checkpoint's tree size and the newest one a quorum of the
// witness policy cosigned (the checkpoint signer is one).
type WitnessStatus interface {
	WitnessStatus() (checkpoint, final int64)
}

// handleHealthz answers while the process runs and serves HTTP; it touches nothing else, so a
// database outage never gets a healthy process restarted.
func handleHealthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, healthBody{Status: "ok"})
}

// handleReadyz answers 200 when requests can be served: the database answers, every migration
// this binary knows is applied, the database takes an insert (a database file removed,
// read-only or on a full disk answers reads but loses or refuses writes), and the audit trail's
// tables are what the migrations made (else no decrypt is served). Otherwise 503 not_ready; the
// cause goes to the log only. With witnesses (ws not nil), a ready answer says how far their
// cosignatures are behind the checkpoints: witnesses lagging never stop decrypts, so they never
// make the service not ready.
func handleReadyz(h Health, ws WitnessStatus, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if h != nil {
			if detail, err := notReady(r.Context(), h); detail != "" {
				attrs := []any{slog.String("reason", detail)}
				if err != nil {
					attrs = append(attrs, slog.String("error", err.Error()))
				}
				log.WarnContext(r.Context(), "not ready", attrs...)
				writeErrorBody(w, http.StatusServiceUnavailable, "not_ready", detail)
				return
			}
		}
		body := healthBody{Status: "ready"}
		if ws != nil {
			cp, final := ws.WitnessStatus()
			body.AuditWitnesses = &witnessLag{CheckpointSize: cp, FinalSize: final}
		}
		writeJSON(w, http.StatusOK, body)
	}
}

// notReady returns why the service is not ready, or "" when it is.
func notReady(ctx context.Context, h Health) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if err := h.Ping(ctx); err != nil {
		return "the database is not reachable", err
	}
	n, err := h.Pending(ctx)
	if err != nil {
		return "the database schema could not be checked", err
	}
	if n > 0 {
		return fmt.Sprintf("%d schema migration(s) are not applied", n), nil
	}
	if err := h.Writable(ctx); err != nil {
		return "the database cannot be written", err
	}
	if err := h.TrailCatalogHeld(); err != nil {
		return "the audit trail's tables are not what the migrations made: no request that records an audit event is served", err
	}
	return "", nil
}
