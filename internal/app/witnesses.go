package app

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"

	"golang.org/x/mod/sumdb/tlog"

	"backoffice/internal/checkpoint"
	"backoffice/internal/witness"
)

// witnesses sends each checkpoint serve signs, with the consistency proof from the size each
// witness last cosigned, to the witnesses of the policy (BACKOFFICE_AUDIT_WITNESSES), and adds
// the cosignatures that verify to the note before it is written and served. It runs in the
// signer's goroutine, off the request path: a witness that is down or slow costs the signer at
// most the client's timeout, and never an event or a decrypt. A checkpoint whose cosignatures do
// not make the policy's quorum is written all the same, with what it has: it is not final, which
// the log, the metrics and /readyz show, and the next checkpoint is sent again.
type witnesses struct {
	policy *witness.Policy
	client witness.Client
	log    *slog.Logger
	obs    witnessObserver // nil: no metrics
	// sizes are the tree size each witness is known to have cosigned, by name (the signer's
	// goroutine alone reads and writes them).
	sizes map[string]int64
	// signed is the newest checkpoint's size, final the newest size a quorum cosigned.
	signed, final atomic.Int64
}

// witnessObserver counts the witnesses' answers and the checkpoints' sizes (*metrics.Metrics is
// one).
type witnessObserver interface {
	ObserveWitnessAnswer(witness, outcome string)
	ObserveAuditCheckpoint(size, final int64)
}

// newWitnesses is nil without a policy.
func newWitnesses(p *witness.Policy, log *slog.Logger, obs witnessObserver) *witnesses {
	if p == nil {
		return nil
	}
	return &witnesses{policy: p, log: log, obs: obs, sizes: map[string]int64{}}
}

// cosign sends note, the checkpoint of size the log signed, to every witness at once and returns
// it with the cosignatures that verified, and whether they make the policy's quorum. Every answer
// but a cosignature is logged naming its witness: a refusal (a fork, a rollback, a log or key it
// does not know) as an error, a witness that could not be reached as a warning. The status
// (/readyz, the metrics) is not moved here: settle moves it once the checkpoint is written.
func (w *witnesses) cosign(ctx context.Context, note []byte, size int64, hashes tlog.HashReader) ([]byte, bool) {
	out, err := w.client.Cosign(ctx, w.policy, note, w.sizes, func(_ context.Context, old, new int64) (tlog.TreeProof, error) {
		return tlog.ProveTree(new, old, hashes)
	})
	if err != nil {
		w.log.Error("audit checkpoint not sent to the witnesses", slog.Int64("size", size), slog.String("error", err.Error()))
		return note, false
	}
	for _, r := range out.Results {
		w.sizes[r.Witness] = r.Size // what the witness cosigned, whatever becomes of this checkpoint
		w.answered(r, size)
	}
	if !out.Met {
		w.log.Warn("audit checkpoint not final: its cosignatures do not make the witness policy's quorum; decrypts go on, and the next checkpoint is sent again",
			slog.Int64("size", size), slog.String("cosigned_by", strings.Join(out.Signed, ",")), slog.Int64("last_final_size", w.final.Load()))
	}
	return out.Note, out.Met
}

// settle records that the checkpoint of size is written (and served), final when met: a
// checkpoint that could not be written (a full disk) moves neither the status nor the metrics.
func (w *witnesses) settle(size int64, met bool) {
	if met {
		w.final.Store(size)
	}
	w.observe(size)
}

// answered logs and counts one witness's answer.
func (w *witnesses) answered(r witness.Result, size int64) {
	outcome := answerOutcome(r.Err)
	if w.obs != nil {
		w.obs.ObserveWitnessAnswer(r.Witness, outcome)
	}
	switch outcome {
	case "cosigned":
	case "refused", "behind", "bad_cosignature":
		w.log.Error("audit checkpoint refused by a witness: a fork or a rollback of the trail, or a log or key it does not know (see docs/compliance.md#witnesses)",
			slog.String("witness", r.Witness), slog.String("outcome", outcome), slog.Int64("size", size),
			slog.Int64("witness_size", r.Size), slog.String("error", r.Err.Error()))
	default:
		w.log.Warn("audit checkpoint: a witness did not answer; it is sent again with the next checkpoint",
			slog.String("witness", r.Witness), slog.String("outcome", outcome), slog.Int64("size", size), slog.String("error", r.Err.Error()))
	}
}

// answerOutcome names a witness's answer for the log and the metric's label.
func answerOutcome(err error) string {
	switch {
	case err == nil:
		return "cosigned"
	case errors.Is(err, witness.ErrBehind):
		return "behind"
	case errors.Is(err, witness.ErrRefused):
		return "refused"
	case errors.Is(err, witness.ErrBadCosignature):
		return "bad_cosignature"
	case errors.Is(err, witness.ErrConflict):
		return "conflict"
	}
	return "unavailable"
}

// observe records the newest checkpoint's size, and the newest final one.
func (w *witnesses) observe(size int64) {
	w.signed.Store(size)
	if w.obs != nil {
		w.obs.ObserveAuditCheckpoint(size, w.final.Load())
	}
}

// status is the newest checkpoint's size and the newest a quorum of witnesses cosigned.
func (w *witnesses) status() (signed, final int64) {
	return w.signed.Load(), w.final.Load()
}

// verifyPolicy is the witness policy audit verify checks the checkpoints against: the file
// --witnesses names (a witness's URL is not needed to check its cosignatures), else the
// configured one (nil: none).
func verifyPolicy(path string, configured *witness.Policy) (*witness.Policy, error) {
	if path == "" {
		return configured, nil
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("--witnesses: %v", err)
	}
	p, err := witness.ParsePolicy(text)
	if err != nil {
		return nil, usagef("--witnesses: %s: %v", path, err)
	}
	return p, nil
}

// witnessedLines checks each checkpoints file's newest checkpoint against the witness policy:
// its log signature under keys, and cosignatures that make the policy's quorum. A checkpoint the
// chain was verified against, and which a quorum of witnesses cosigned, proves the history up to
// it is the one they saw (the checkpoints before it are consistent with it: checkTrees). The
// lines say which witnesses signed; a file whose newest checkpoint is short of the quorum, or is
// not a signed note, cannot be checked (ErrCannotCheck, naming it).
func witnessedLines(files []string, keys map[string]ed25519.PublicKey, policy *witness.Policy) ([]string, error) {
	var lines, short []string
	if len(files) == 0 {
		short = append(short, "no checkpoints given (set BACKOFFICE_AUDIT_CHECKPOINTS or --checkpoints)")
	}
	for _, file := range files {
		// The walk checked the whole file already; only its end is read again.
		tail, err := checkpoint.ReadLast(file)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCannotCheck, err)
		}
		if tail.Last == nil {
			short = append(short, file+" holds no checkpoint")
			continue
		}
		newest := *tail.Last
		signed, met, err := witnessedBy(newest, keys, policy)
		if err != nil {
			short = append(short, fmt.Sprintf("%s: %v", newest.What(), err))
			continue
		}
		by := "no witness"
		if len(signed) > 0 {
			by = strings.Join(signed, ", ")
		}
		if !met {
			short = append(short, fmt.Sprintf("%s (seq %d) is cosigned by %s, short of the policy's quorum", newest.What(), newest.Seq, by))
			continue
		}
		lines = append(lines, fmt.Sprintf("witnessed: %s (seq %d), cosigned by %s: the policy's quorum", newest.What(), newest.Seq, by))
	}
	if len(short) > 0 {
		return nil, fmt.Errorf("%w: not witnessed: %s", ErrCannotCheck, strings.Join(short, "; "))
	}
	return lines, nil
}

// witnessedBy checks e, a checkpoint note, under the log's key it names and the policy.
func witnessedBy(e checkpoint.Entry, keys map[string]ed25519.PublicKey, policy *witness.Policy) (signed []string, met bool, err error) {
	if !e.IsNote() {
		return nil, false, errors.New("a line of the format before signed notes, which carries no cosignature")
	}
	pub, ok := keys[e.KeyID]
	if !ok {
		return nil, false, fmt.Errorf("signed under key %s, which is not given", e.KeyID)
	}
	log, err := checkpoint.Verifier(e.Origin, pub)
	if err != nil {
		return nil, false, err
	}
	v, err := policy.Check(e.Note, log)
	if err != nil {
		return nil, false, err
	}
	return v.Signed, v.Met, nil
}
