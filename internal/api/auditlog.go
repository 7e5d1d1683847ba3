package api

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"backoffice/internal/domain"
	"backoffice/internal/trail"
)

// AuditLog is what the tiles and the proofs read of the trail's Merkle tree (RFC 6962; the leaves
// are trail.Leaf, the event of seq s at index s-1).
type AuditLog interface {
	trail.Indexed
	AuditTreeSize(ctx context.Context) (int64, error)
	// AuditPruneNote is the newest prune's signed note (found false when the trail was never
	// pruned).
	AuditPruneNote(ctx context.Context) (note []byte, found bool, err error)
}

// Caching of tiles. A full tile's bytes never change, nor do a partial tile's; a full tile stays
// served, a partial one may not be (c2sp.org/tlog-tiles lets a log delete it once the full one
// exists), so it is kept briefly. Private: the tiles need credentials, and a shared cache must not
// hand them to a caller without.
const (
	fullTileCaching    = "private, max-age=31536000, immutable"
	partialTileCaching = "private, max-age=60"
)

const (
	tilePrefix = "/v1/audit-log/tile/"
	tileRoute  = tilePrefix + "{tile...}"
)

// auditLogRoutes registers the tiles and the proofs of the trail, when the deployment has a tree
// (log); proofs are against the latest checkpoint of cps (none while it is nil).
func auditLogRoutes(mux *http.ServeMux, withAuth func(handlerFunc) http.Handler, st AuditStore, log AuditLog, cps CheckpointSource, now func() time.Time) {
	if log == nil {
		return
	}
	mux.Handle("GET "+tileRoute, withAuth(handleAuditTile(log)))
	mux.Handle(auditPrunedRoute, withAuth(handleAuditPruned(log)))
	mux.Handle("GET /v1/audit-events/{eventId}/proof", withAuth(handleAuditProof(st, log, cps, now)))
}

// auditPrunedRoute serves the newest prune note, beside the checkpoint.
const auditPrunedRoute = "GET /v1/audit-log/pruned"

// handleAuditPruned answers GET /v1/audit-log/pruned with the newest prune's note as signed, to
// whoever may read the audit trail: what tells an auditor reading the tiles that the events below
// its seq were pruned by policy (their entry bundles answer 404) and which archive holds them. Not
// recorded, as the checkpoint is not.
func handleAuditPruned(log AuditLog) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, actor domain.Actor) error {
		if err := mayReadAuditTrail(actor); err != nil {
			return err
		}
		note, found, err := log.AuditPruneNote(r.Context())
		if err != nil {
			return err
		}
		if !found {
			return domain.Errorf(domain.KindNotFound, "not_found", "the audit trail was never pruned")
		}
		return writeNote(w, note)
	}
}

// handleAuditTile answers GET /v1/audit-log/tile/<L>/<N>[.p/<W>] and tile/entries/<N>[.p/<W>]
// (c2sp.org/tlog-tiles, height 8) to those who may read the trail. Tile reads are not recorded:
// a tile holds keyed subject tags and hashes, none of an event's fields.
func handleAuditTile(log AuditLog) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, actor domain.Actor) error {
		// The escaped path: an escaped slash or digit is not a second spelling of a tile.
		t, err := trail.ParseTilePath(strings.TrimPrefix(r.URL.EscapedPath(), tilePrefix))
		if err != nil {
			var pe *trail.PathError
			if errors.As(err, &pe) {
				return domain.InvalidParameter(pe.Part, pe.Problem)
			}
			return err
		}
		if err := mayReadAuditTrail(actor); err != nil {
			return err
		}
		size, err := log.AuditTreeSize(r.Context())
		if err != nil {
			return err
		}
		if !trail.TileInTree(t, size) {
			return domain.Errorf(domain.KindNotFound, "not_found",
				"tile %s was not found: the trail's tree has %d entries", trail.TilePath(t), size)
		}
		body, err := readTile(r.Context(), log, t)
		if err != nil {
			return err
		}
		caching := fullTileCaching
		if t.W < trail.TileWidth {
			caching = partialTileCaching
		}
		w.Header().Set("Cache-Control", caching)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
		return nil
	}
}

// readTile reads a hash tile, or an entry bundle checked against its level 0 tile: every entry
// must hash to the tree's leaf hash, or nothing is served.
func readTile(ctx context.Context, log AuditLog, t tlog.Tile) ([]byte, error) {
	hashTile := t
	hashTile.L = max(t.L, 0)
	hashes, err := tlog.ReadTileData(hashTile, log.AuditHashReader(ctx))
	if err != nil {
		return nil, fmt.Errorf("tile %s: %w", trail.TilePath(t), err)
	}
	if t.L >= 0 {
		return hashes, nil
	}
	start := t.N * trail.TileWidth
	leaves, err := log.AuditLeaves(ctx, start, start+int64(t.W))
	if errors.Is(err, domain.ErrNotFound) {
		// A bundle is whole or not served: one holding a leaf whose event the retention policy
		// pruned (`audit prune`) is not found; the hash tiles, and the proofs of kept events, stay.
		return nil, domain.Errorf(domain.KindNotFound, "not_found",
			"tile %s was not found: the trail no longer holds every event of it (pruned by the retention policy)", trail.TilePath(t))
	}
	if err != nil {
		return nil, err
	}
	if len(leaves) != t.W {
		return nil, fmt.Errorf("entries %s: %d leaves read, %d asked", trail.TilePath(t), len(leaves), t.W)
	}
	return entryBundle(t, leaves, hashes)
}

// entryBundle writes each leaf after its length (big-endian uint16), checking it against its
// hash in the level 0 tile.
func entryBundle(t tlog.Tile, leaves [][]byte, hashes []byte) ([]byte, error) {
	var b []byte
	for i, leaf := range leaves {
		h := trail.LeafHash(leaf)
		if len(leaf) > 0xffff || string(h[:]) != string(hashes[i*tlog.HashSize:(i+1)*tlog.HashSize]) {
			return nil, fmt.Errorf("entries %s: leaf %d is not the tree's", trail.TilePath(t), t.N*trail.TileWidth+int64(i))
		}
		b = binary.BigEndian.AppendUint16(b, uint16(len(leaf)))
		b = append(b, leaf...)
	}
	return b, nil
}

// handleAuditProof answers GET /v1/audit-events/{eventId}/proof: the event beside its
// c2sp.org/tlog-proof@v1 against the newest signed checkpoint, 409 not_checkpointed while no
// checkpoint covers it. It discloses an event, so it is recorded as a read of the trail.
func handleAuditProof(st AuditStore, log AuditLog, cps CheckpointSource, now func() time.Time) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, actor domain.Actor) error {
		raw := r.PathValue("eventId")
		id, err := domain.ParseID(raw)
		if err != nil {
			err = domain.InvalidParameter("eventId", "must be a uuid")
		} else {
			err = mayReadAuditTrail(actor)
		}
		event := domain.AuditEvent{At: now(), ActorUserID: actor.UserID, Action: readAuditAction, TargetID: auditTrailTarget,
			Outcome: outcomeOf(err), Detail: "proof " + auditID(raw)}
		if err != nil {
			if auditErr := st.RecordAudit(r.Context(), event); auditErr != nil {
				return auditErr
			}
			return err
		}
		p, err := proveEvent(r.Context(), log, cps, id)
		event.Outcome = outcomeOf(err)
		if auditErr := st.RecordAudit(r.Context(), event); auditErr != nil {
			return auditErr
		}
		if err != nil {
			return err
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, p)
		return nil
	}
}

// proveEvent finds the event's leaf and proves it against the newest checkpoint.
func proveEvent(ctx context.Context, log AuditLog, cps CheckpointSource, id domain.ID) (trail.EventProof, error) {
	var note []byte
	ok := false
	if cps != nil {
		note, ok = cps.LatestCheckpoint()
	}
	if !ok {
		// An event that is not in the trail is not found, checkpoint or none.
		if _, _, err := log.AuditEventIndex(ctx, id); err != nil {
			return trail.EventProof{}, notFoundEvent(id, err)
		}
		return trail.EventProof{}, notCheckpointed("no checkpoint has been signed yet")
	}
	p, err := trail.ProveID(ctx, log, id, note)
	if errors.Is(err, trail.ErrNotCovered) {
		return p, notCheckpointed(err.Error())
	}
	return p, notFoundEvent(id, err)
}

// notFoundEvent is err, the refusal of an event id the trail does not hold when it says so.
func notFoundEvent(id domain.ID, err error) error {
	if errors.Is(err, domain.ErrNotFound) {
		return domain.NotFound("audit event " + string(id))
	}
	return err
}

func notCheckpointed(why string) error {
	return domain.Conflict("not_checkpointed", "the event is in the trail, but no signed checkpoint covers it yet ("+why+"); the next checkpoint will")
}
