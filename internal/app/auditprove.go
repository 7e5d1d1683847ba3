package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"

	"backoffice/internal/api"
	"backoffice/internal/checkpoint"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
	"backoffice/internal/trail"
)

// runAuditProve writes an event's proof (the answer of GET /v1/audit-events/{id}/proof), or with
// --target-id that object's complete history (trail.History: its tags and every event about it
// with its proof), against a signed checkpoint. It reads the database as audit list does, and is
// not itself recorded.
func runAuditProve(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("audit prove")
	cfg.databaseFlags(fs)
	target := fs.String("target-id", "", "write this object's (uuid) complete history: its tags and every event about it, proved")
	checkpointFile := fs.String("checkpoint", "", "the signed checkpoint (a c2sp.org/tlog-checkpoint note, as GET /v1/audit-log/checkpoint serves it) to prove against (default: the newest note of BACKOFFICE_AUDIT_CHECKPOINTS)")
	out := fs.String("out", "-", "write the proof here (- is stdout)")
	pos, err := cfg.parseArgs(fs, args)
	if err != nil {
		return err
	}
	if (*target == "") == (len(pos) == 0) || len(pos) > 1 {
		return usagef("give one event id, or --target-id ID")
	}
	note, err := proofCheckpoint(*checkpointFile, cfg.AuditCheckpoints)
	if err != nil {
		return err
	}
	var id domain.ID
	var filter domain.AuditFilter
	if *target != "" {
		if filter, err = api.ParseAuditFilter(url.Values{"targetId": {*target}}); err != nil {
			return auditFlagError(err)
		}
	} else if id, err = domain.ParseID(pos[0]); err != nil {
		return usagef("event id %q: must be a uuid", pos[0])
	}
	st, err := openStore(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	if *target == "" {
		p, err := proveOne(ctx, st, id, note)
		if err != nil {
			return err
		}
		return writeOutput(*out, cfg.ownFiles(), env.Stdout, func(w io.Writer) error { return writeProofJSON(w, p) })
	}
	ring, err := masterRing(cfg)
	if err != nil {
		return fmt.Errorf("--target-id: the subject's tags are made under the master keys: %w", err)
	}
	h, err := proveTarget(ctx, st, ring, filter, note)
	if err != nil {
		return err
	}
	return writeOutput(*out, cfg.ownFiles(), env.Stdout, func(w io.Writer) error { return writeProofJSON(w, h) })
}

// proofCheckpoint reads the signed checkpoint to prove against: the file --checkpoint names (the
// note alone), or the newest note of the checkpoints file serve appends to.
func proofCheckpoint(file, checkpoints string) ([]byte, error) {
	var note []byte
	switch {
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, usagef("--checkpoint: %v", err)
		}
		note = b
	case checkpoints != "":
		f, err := checkpoint.ReadFile(checkpoints)
		if err != nil {
			return nil, fmt.Errorf("BACKOFFICE_AUDIT_CHECKPOINTS: %w", err)
		}
		for _, e := range f.Entries {
			if e.Checkpoint.IsNote() {
				note = e.Checkpoint.Note
			}
		}
		if note == nil {
			return nil, fmt.Errorf("%w: BACKOFFICE_AUDIT_CHECKPOINTS (%s) holds no signed note yet: give --checkpoint, or wait for serve's next checkpoint", ErrCannotCheck, checkpoints)
		}
	default:
		return nil, usagef("--checkpoint: the signed checkpoint to prove against is required (or BACKOFFICE_AUDIT_CHECKPOINTS)")
	}
	if _, err := trail.CheckpointOf(note); err != nil {
		return nil, usagef("--checkpoint: %v", err)
	}
	return note, nil
}

// proveOne proves the event id.
func proveOne(ctx context.Context, st *store.Store, id domain.ID, note []byte) (trail.EventProof, error) {
	p, err := trail.ProveID(ctx, st, id, note)
	if errors.Is(err, domain.ErrNotFound) {
		return trail.EventProof{}, fmt.Errorf("audit event %s: not in the trail's tree", id)
	}
	return p, err
}

// proveTarget proves the complete history of the subject the filter names (trail.ProveHistory):
// every event about it, in seq order, each covered by the checkpoint (a file that left some out
// would read as the whole history), and its tag under every key of the ring, so that an auditor
// finds an event of the subject's under any of them in the tiles, had the database's list left
// it out.
func proveTarget(ctx context.Context, st *store.Store, ring *secrets.Ring, f domain.AuditFilter, note []byte) (trail.History, error) {
	var events []domain.AuditEvent
	err := listAudit(ctx, st, f, 0, func(page []domain.AuditEvent) error {
		events = append(events, page...)
		return nil
	})
	if err != nil {
		return trail.History{}, err
	}
	slices.Reverse(events) // newest first: the oldest first in the file
	return trail.ProveHistory(ctx, st, ring, ring.KeyIDs(), f.TargetID, events, note)
}

func writeProofJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
