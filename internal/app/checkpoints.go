package app

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"backoffice/internal/checkpoint"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
)

// checkpointInterval is how often serve signs a checkpoint of the audit trail while events are
// written: at least once a minute, as promised in docs/compliance.md.
const checkpointInterval = 30 * time.Second

// checkpointPage is how many events the signer reads and checks at a time to extend its digest,
// and checkpointRest how long it rests after each full page. The signer shares the server's
// cores with the requests, and Go's scheduler lets a goroutine that keeps computing run for a
// whole time slice (10 ms) before a ready request gets its next turn: checking a heavy load's
// events in one stretch, the signer made every request of that stretch wait a slice at each of
// its turns (a decrypt has several: its read, the audit writer, the writer's return from the
// sync, its answer), tens of milliseconds each (docs/performance.md). In short pages with a rest
// after each, a request waits at most one page's work, and the signer still checks events many
// times faster than decrypts write them.
const (
	checkpointPage = 100
	checkpointRest = time.Millisecond
)

// errChainCut means the trail no longer extends the last checkpoint: its tail was cut off or
// rewritten while the service ran. The service then signs nothing more.
var errChainCut = errors.New("the audit chain no longer extends the last checkpoint")

// checkpointer signs checkpoints of the audit trail, off the request path: each extends the
// digest of the last one with the events written since, after checking their numbering and
// links, and names the one before it.
type checkpointer struct {
	st   *store.Store
	ring *secrets.Ring
	path string // "" when kept in the log only
	log  *slog.Logger
	now  func() time.Time
	// last is the newest checkpoint (zero before the first); seq, head and digest its coverage.
	last   checkpoint.Checkpoint
	digest []byte
}

// newCheckpointer carries on from the last checkpoint in the file at path, if any.
func newCheckpointer(path string, st *store.Store, ring *secrets.Ring, log *slog.Logger) (*checkpointer, error) {
	c := &checkpointer{st: st, ring: ring, path: path, log: log, now: time.Now}
	if path == "" {
		return c, nil
	}
	// A path serve cannot append to is found now, not at the first checkpoint.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("BACKOFFICE_AUDIT_CHECKPOINTS: %w", err)
	}
	f.Close()
	entries, err := checkpoint.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("BACKOFFICE_AUDIT_CHECKPOINTS: %w", err)
	}
	if len(entries) > 0 {
		c.last = entries[len(entries)-1].Checkpoint
		if c.digest, err = hex.DecodeString(c.last.Digest); err != nil {
			return nil, fmt.Errorf("BACKOFFICE_AUDIT_CHECKPOINTS: %s: the last checkpoint's digest is not hex", path)
		}
	}
	return c, nil
}

// run signs a checkpoint every interval until ctx ends.
func (c *checkpointer) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.tick(ctx)
		}
	}
}

// tick signs a checkpoint if events were written since the last one, and logs what went wrong
// if it cannot: an error when the trail no longer extends the last checkpoint or does not hold.
func (c *checkpointer) tick(ctx context.Context) {
	if err := c.sign(ctx); err != nil {
		if ctx.Err() != nil {
			return // stopped while signing: the last tick (runningCheckpoints.stop) signs
		}
		level := slog.LevelError // a chain cut under the service, or a file it cannot write
		if errors.Is(err, domain.ErrUnavailable) {
			level = slog.LevelWarn // the database is away; the next tick tries again
		}
		c.log.Log(ctx, level, "audit checkpoint not signed", slog.String("error", err.Error()),
			slog.Int64("last_checkpoint_seq", c.last.Seq), slog.String("last_checkpoint_head", c.last.Head))
	}
}

// sign extends the last checkpoint with the events written since, checks them, and signs.
func (c *checkpointer) sign(ctx context.Context) error {
	if err := c.stillExtends(ctx); err != nil {
		return err
	}
	seq, head, digest := c.last.Seq, c.last.Head, c.digest
	for {
		events, err := c.st.AuditEventsAfter(ctx, seq, checkpointPage)
		if err != nil {
			return err
		}
		for _, e := range events {
			if err := c.follows(seq, head, e); err != nil {
				return err
			}
			if digest, err = store.ChainDigest(digest, e); err != nil {
				return err
			}
			seq, head = e.Seq, e.Hash
		}
		if len(events) < checkpointPage {
			break
		}
		if err := rest(ctx, checkpointRest); err != nil {
			return err
		}
	}
	if seq == c.last.Seq {
		return nil // nothing new
	}
	keyID := c.ring.ActiveKeyID()
	key, err := c.ring.CheckpointKey(keyID)
	if err != nil {
		return err
	}
	cp := checkpoint.Checkpoint{Seq: seq, Head: head, Digest: hex.EncodeToString(digest), At: c.now().UTC().Format(time.RFC3339Nano), KeyID: keyID}
	if c.last.Seq > 0 {
		cp.Prev = c.last.ID()
	}
	cp = cp.Sign(key)
	if c.path != "" {
		if err := checkpoint.Append(c.path, cp); err != nil {
			return err
		}
	}
	c.log.Info("audit checkpoint", slog.Int64("seq", cp.Seq), slog.String("head", cp.Head), slog.String("digest", cp.Digest),
		slog.String("prev", cp.Prev), slog.String("at", cp.At), slog.String("key_id", cp.KeyID), slog.String("sig", cp.Sig))
	c.last, c.digest = cp, digest
	return nil
}

// rest waits d, or until ctx ends.
func rest(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// stillExtends checks that the last checkpoint's event is still in the trail, with its link.
func (c *checkpointer) stillExtends(ctx context.Context) error {
	if c.last.Seq == 0 {
		return nil
	}
	events, err := c.st.AuditEventsAfter(ctx, c.last.Seq-1, 1)
	if err != nil {
		return err
	}
	if len(events) == 0 || events[0].Seq != c.last.Seq || events[0].Hash != c.last.Head {
		return fmt.Errorf("%w (seq %d, head %s): its tail was cut off or rewritten; find out why before moving the checkpoints file aside", errChainCut, c.last.Seq, orDash(c.last.Head))
	}
	return nil
}

// follows checks that e comes right after the event seq (whose link is head): numbered next,
// and linked (once the chain has begun) by a link that holds under the ring.
func (c *checkpointer) follows(seq int64, head string, e domain.AuditEvent) error {
	if e.Seq != seq+1 {
		return fmt.Errorf("%w: seq %d follows seq %d", errChainCut, e.Seq, seq)
	}
	if e.Hash == "" {
		if head != "" {
			return fmt.Errorf("the audit chain is broken at seq %d: no link after the chain began", e.Seq)
		}
		return nil
	}
	prev, err := hex.DecodeString(head)
	if err != nil {
		return err
	}
	if err := store.CheckLink(c.ring, prev, e); err != nil && !errors.Is(err, secrets.ErrUnknownKey) {
		return fmt.Errorf("the audit chain is broken at seq %d: %w", e.Seq, err)
	}
	return nil
}

// runningCheckpoints is the checkpointer serve runs beside the API.
type runningCheckpoints struct {
	c      *checkpointer
	cancel context.CancelFunc
	done   chan struct{}
}

// startCheckpoints warns if opening sealed the audit chain's genesis, then signs checkpoints every
// checkpointInterval until stopped. Without BACKOFFICE_AUDIT_CHECKPOINTS they go to the log only,
// and serve warns that a cut tail cannot be caught.
func startCheckpoints(ctx context.Context, cfg Config, st *store.Store, ring *secrets.Ring, g genesisSeal, log *slog.Logger) (*runningCheckpoints, error) {
	switch {
	case g.leftUnsealed:
		log.Error("the audit chain's genesis is unsealed although checkpoints exist: its seal was removed, so it is left unsealed; run `backoffice audit verify` to see what changed",
			slog.Int64("last_unlinked_seq", g.lastUnlinked))
	case g.wasUnsealed && g.lastUnlinked > 0: // a new database's genesis (nothing before the chain) is no news
		log.Warn("sealed the audit chain's genesis: every event after it must be linked. Expected once, on the first start after an upgrade; otherwise its seal had been removed (check the checkpoints with `backoffice audit verify`)",
			slog.Int64("last_unlinked_seq", g.lastUnlinked), slog.String("key_id", ring.ActiveKeyID()))
	}
	if cfg.AuditCheckpoints == "" {
		log.Warn("BACKOFFICE_AUDIT_CHECKPOINTS is not set: audit checkpoints go to this log only, and a tail cut off the audit trail cannot be caught from a file (see docs/compliance.md)")
	}
	c, err := newCheckpointer(cfg.AuditCheckpoints, st, ring, log.With(slog.String("component", "audit checkpoints")))
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &runningCheckpoints{c: c, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		c.run(runCtx, checkpointInterval)
	}()
	return r, nil
}

// stop ends the ticker and signs a last checkpoint.
func (r *runningCheckpoints) stop(ctx context.Context) {
	r.cancel()
	<-r.done
	r.c.tick(context.WithoutCancel(ctx))
}
