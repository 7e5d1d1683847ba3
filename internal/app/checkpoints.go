package app

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"backoffice/internal/auditlog"
	"backoffice/internal/checkpoint"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
)

// checkpointInterval is how often serve signs a checkpoint of the audit trail while events are
// written: at least once a minute, as promised in docs/compliance.md.
const checkpointInterval = 30 * time.Second

// checkpointer signs checkpoints of the audit trail, off the request path. It follows the trail
// with one walk of the chain (auditlog.Follower), from the last checkpoint in its file that is
// signed under a key of the ring (or from the genesis), carried over what this process committed
// (auditlog.CommitMemory) and link by link under keys the ring holds over what others did, and
// signs only what that walk verified: the head it signs is the one of an auditlog.Verified that
// holds (Err nil), and its tree must extend the checkpoint before it (checkpoint.Consistent). A
// trail that does not verify is logged as an error and never signed.
type checkpointer struct {
	st   auditTrail
	ring *secrets.Ring
	path string // "" when kept in the log only
	log  *slog.Logger
	now  func() time.Time
	// base is the checkpoint the walk starts from (nil: from the genesis); follow the walk, made
	// as the checkpointer starts to run (or at the first tick that can make it).
	base   *auditlog.ChainExpect
	follow *auditlog.Follower
	// mem is what this process committed since the walk last checked: the walk
	// must meet each of those events as written before anything is signed (auditlog.CommitMemory).
	mem *auditlog.CommitMemory
	// signed is the newest event a checkpoint covers (the base's, then this process's).
	signed int64
	// keys are the ring's checkpoint public keys: the file's last checkpoint must hold under one
	// before a new one names it.
	keys map[string]ed25519.PublicKey
	// origin names the log in the checkpoints it signs (BACKOFFICE_AUDIT_ORIGIN); last is the
	// newest checkpoint it signed or found in its file, the one the next must extend, and which
	// the file must still hold when it appends (checkpoint.Append refuses one replaced since);
	// latest the newest signed note, which GET /v1/audit-log/checkpoint serves.
	origin string
	last   *checkpoint.Checkpoint
	latest atomic.Pointer[[]byte]
	// witnesses cosign each checkpoint before it is written (nil: no policy).
	witnesses *witnesses
}

// auditTrail is what the checkpointer reads of the store: a walk of the audit chain from where it
// left off, and the memory of this process's commits it checks them against (*store.Store is one).
type auditTrail interface {
	RememberCommits() *auditlog.CommitMemory
	FollowAuditChain(ctx context.Context, ver auditlog.ChainVerifier, base *auditlog.ChainExpect, mem *auditlog.CommitMemory) (*auditlog.Follower, error)
	// CheckTrailCatalog fails while the trail's tables are not what the migrations made.
	CheckTrailCatalog(ctx context.Context) error
	// AuditHashReader reads the audit log's stored tree hashes: what a consistency proof between
	// two checkpoints is made of.
	AuditHashReader(ctx context.Context) tlog.HashReader
	// AuditTreeSize is how many leaves the audit log's tree holds.
	AuditTreeSize(ctx context.Context) (int64, error)
}

// newCheckpointer carries on from the last checkpoint in the file at path, which must be signed
// under a key of the ring: serve does not start on a file whose last checkpoint the next could
// not name (checkpoint.CheckPredecessor), nor on one whose end is not checkpoints. It reads only
// the file's end (checkpoint.ReadLast), so start-up does not grow with the file: that last
// checkpoint names the one before it, and so vouches for the file, which `audit verify` reads
// whole. Torn checkpoints near the end are logged and left out. The tree the last checkpoint
// states is checked against the store's at the first walk (startWalk).
func newCheckpointer(path string, st auditTrail, ring *secrets.Ring, log *slog.Logger) (*checkpointer, error) {
	c := &checkpointer{st: st, ring: ring, path: path, log: log, now: time.Now, origin: checkpoint.DefaultOrigin}
	if path == "" {
		c.mem = st.RememberCommits()
		return c, nil
	}
	// A path serve cannot append to is found now, not at the first checkpoint.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("BACKOFFICE_AUDIT_CHECKPOINTS: %w", err)
	}
	f.Close()
	tail, err := checkpoint.ReadLast(path)
	if err != nil {
		return nil, fmt.Errorf("BACKOFFICE_AUDIT_CHECKPOINTS: %w: find out why, then move the file aside (keep it) and start again", err)
	}
	if tail.Torn > 0 {
		log.Warn("audit checkpoints: a torn line (a write cut short by a full disk or a crash) is left out; the checkpoints around it still check, and the next starts on a line of its own",
			slog.String("file", path), slog.Int("torn_near_the_end", tail.Torn))
	}
	keys, err := ringPublicKeys(ring)
	if err != nil {
		return nil, err
	}
	// The first checkpoint this process signs names the file's last: refuse now, not at the first
	// tick, what Append would refuse then.
	if last := tail.Last; last != nil {
		if err := checkpoint.CheckPredecessor(last.Checkpoint, keys); err != nil {
			return nil, fmt.Errorf("BACKOFFICE_AUDIT_CHECKPOINTS: %w", err)
		}
		x, err := expectOf(*last)
		if err != nil {
			return nil, fmt.Errorf("BACKOFFICE_AUDIT_CHECKPOINTS: %w", err)
		}
		c.base, c.signed = &x, x.Seq
		c.keep(last.Checkpoint)
	}
	c.keys = keys
	// Remembered from now on, before the first request is served: the first walk, at the first
	// tick, checks every event this process committed.
	c.mem = st.RememberCommits()
	return c, nil
}

// ringPublicKeys are the checkpoint public keys of every key of the ring, by key id.
func ringPublicKeys(ring *secrets.Ring) (map[string]ed25519.PublicKey, error) {
	keys := map[string]ed25519.PublicKey{}
	for _, id := range ring.KeyIDs() {
		pub, err := ring.CheckpointPublicKey(id)
		if err != nil {
			return nil, err
		}
		keys[id] = pub
	}
	return keys, nil
}

// run starts the walk at once, then signs a checkpoint every interval until ctx ends. Started
// before the first tick, the walk tells the memory of this process's commits where they carry on
// from (auditlog.CommitMemory), which then holds no events of its own for the first interval.
func (c *checkpointer) run(ctx context.Context, interval time.Duration) {
	if c.follow == nil {
		if err := c.startWalk(ctx); err != nil {
			c.report(ctx, err)
		}
	}
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
// if it cannot: an error when the trail does not verify or the file cannot be written.
func (c *checkpointer) tick(ctx context.Context) {
	if err := c.sign(ctx); err != nil {
		c.report(ctx, err)
	}
}

// report logs why no checkpoint was signed.
func (c *checkpointer) report(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return // stopped while signing: the last tick (runningCheckpoints.stop) signs
	}
	level := slog.LevelError // a trail that does not verify, or a file it cannot write
	if errors.Is(err, domain.ErrUnavailable) {
		level = slog.LevelWarn // the database is away; the next tick tries again
	}
	c.log.Log(ctx, level, "audit checkpoint not signed", slog.String("error", err.Error()),
		slog.Int64("last_checkpoint_seq", c.signed))
}

// sign carries the walk on over the events written since the last tick (the follower carries it
// over this process's own, and walks the rows of others) and signs a checkpoint of the trail as
// it verified it, cosigned by the witnesses when a policy names them. It first checks that the trail's tables are what the migrations made: tables
// that may drop events as they are written (a trigger, a rule, a policy) leave a trail that
// verifies, and signing it would vouch for it.
func (c *checkpointer) sign(ctx context.Context) error {
	if err := c.st.CheckTrailCatalog(ctx); err != nil {
		return fmt.Errorf("nothing is signed: %w", err)
	}
	if c.follow == nil {
		if err := c.startWalk(ctx); err != nil {
			return err
		}
	}
	v, err := c.follow.Next(ctx)
	if err != nil {
		c.walkAgainOnceTreeBuilt(err)
		return fmt.Errorf("the audit trail does not verify, so nothing is signed: %w", err)
	}
	if v.Seq() <= c.signed {
		return nil // nothing new
	}
	if err := v.Err(); err != nil {
		c.walkAgainOnceTreeBuilt(err)
		return fmt.Errorf("nothing is signed: %w", err)
	}
	size, root := v.Tree()
	if size != v.Seq() {
		return fmt.Errorf("nothing is signed: the walk checked the audit log's tree up to %d events, and the chain up to %d", size, v.Seq())
	}
	head := checkpoint.Head{Size: size, Root: root, Link: v.Head(), Digest: v.Digest()}
	keyID := c.ring.ActiveKeyID()
	key, err := c.ring.CheckpointKey(keyID)
	if err != nil {
		return err
	}
	at := c.now()
	// A checkpoint extends the one before it: its tree must prove consistent with that one's,
	// over the stored hashes, or nothing is signed. Once it does, the witnesses cosign it before
	// it is written; one another process appended first (prev covers it) is neither written nor
	// sent.
	cosigned, met := false, false // sent to the witnesses, and their quorum made
	sign := func(prev *checkpoint.Checkpoint) (checkpoint.Checkpoint, error) {
		cp, err := checkpoint.Sign(head, c.origin, idOf(prev), at, keyID, key)
		if err == nil && prev != nil && cp.Seq > prev.Seq {
			err = checkpoint.Consistent(*prev, cp, c.st.AuditHashReader(ctx))
		}
		if err == nil && c.witnesses != nil && (prev == nil || cp.Seq > prev.Seq) {
			cp.Note, met = c.witnesses.cosign(ctx, cp.Note, cp.Seq, c.st.AuditHashReader(ctx))
			cosigned = true
		}
		return cp, err
	}
	cp, appended := checkpoint.Checkpoint{}, true
	if c.path != "" {
		cp, appended, err = checkpoint.Append(c.path, c.keys, c.last, sign)
	} else {
		cp, err = sign(c.last)
	}
	if err != nil {
		return err
	}
	if cosigned && appended {
		c.witnesses.settle(cp.Seq, met)
	}
	if appended {
		c.log.Info("audit checkpoint", slog.Int64("seq", cp.Seq), slog.String("root", cp.Root.String()), slog.String("head", cp.Head),
			slog.String("digest", cp.Digest), slog.String("prev", cp.Prev), slog.String("at", cp.At), slog.String("key_id", cp.KeyID),
			slog.String("note", string(cp.Note)))
	}
	c.signed = cp.Seq
	c.keep(cp)
	return nil
}

// walkAgainOnceTreeBuilt drops the walk when err is a gap of tree rows not built yet: the walk
// stops checking the tree where it finds none, and once a process given the ring has built them,
// a walk begun again from the last checkpoint checks them, and signs.
func (c *checkpointer) walkAgainOnceTreeBuilt(err error) {
	if gap := (*auditlog.ChainGap)(nil); errors.As(err, &gap) && gap.TreeNotBuilt() {
		c.follow = nil
	}
}

// startWalk checks that the store's tree extends the one the checkpoint the walk starts from
// states, then starts the walk there. The walk takes the tree up to that checkpoint as the
// database holds it; the consistency proof (O(log n) stored hashes) is what ties those hashes
// to the signed root. A tree that does not extend it is never signed over (ErrInconsistent,
// logged at every tick); one the store cannot prove now is tried again at the next tick.
func (c *checkpointer) startWalk(ctx context.Context) error {
	if c.last != nil && c.last.IsNote() {
		if err := c.extendsLast(ctx); err != nil {
			return fmt.Errorf("nothing is signed: %w", err)
		}
	}
	f, err := c.st.FollowAuditChain(ctx, c.ring, c.base, c.mem)
	if err != nil {
		return err
	}
	c.follow = f
	return nil
}

// extendsLast says why the store's tree, at its size now, does not extend c.last.
func (c *checkpointer) extendsLast(ctx context.Context) error {
	n, err := c.st.AuditTreeSize(ctx)
	if err != nil {
		return err
	}
	r := c.st.AuditHashReader(ctx)
	if n < c.last.Seq {
		return checkpoint.Extends(n, tlog.Hash{}, *c.last, r)
	}
	root, err := tlog.TreeHash(n, r)
	if err != nil {
		return fmt.Errorf("cannot read the audit log's tree of size %d: %w", n, err)
	}
	return checkpoint.Extends(n, root, *c.last, r)
}

// idOf is the id of prev, "" for none.
func idOf(prev *checkpoint.Checkpoint) string {
	if prev == nil {
		return ""
	}
	return prev.ID()
}

// keep makes cp the checkpoint the next extends and, when it is a signed note, the one served.
func (c *checkpointer) keep(cp checkpoint.Checkpoint) {
	c.last = &cp
	if cp.IsNote() {
		note := cp.Note
		c.latest.Store(&note)
	}
}

// WitnessStatus is the newest checkpoint's tree size and the newest one a quorum of witnesses
// cosigned (api.WitnessStatus).
func (c *checkpointer) WitnessStatus() (checkpoint, final int64) {
	return c.witnesses.status()
}

// LatestCheckpoint is the newest signed note this checkpointer signed or found in its file.
func (c *checkpointer) LatestCheckpoint() ([]byte, bool) {
	note := c.latest.Load()
	if note == nil {
		return nil, false
	}
	return *note, true
}

// runningCheckpoints is the checkpointer serve runs beside the API.
type runningCheckpoints struct {
	c      *checkpointer
	cancel context.CancelFunc
	done   chan struct{}
}

// startCheckpoints says what opening did with an unsealed genesis, then signs checkpoints every
// checkpointInterval until stopped. Without BACKOFFICE_AUDIT_CHECKPOINTS they go to the log only,
// and serve warns that a cut tail cannot be caught from a file.
func startCheckpoints(ctx context.Context, cfg Config, st auditTrail, ring *secrets.Ring, g auditlog.GenesisOpening, log *slog.Logger, obs witnessObserver) (*runningCheckpoints, error) {
	logGenesis(g, ring, log)
	if cfg.AuditCheckpoints == "" {
		log.Warn("BACKOFFICE_AUDIT_CHECKPOINTS is not set: audit checkpoints go to this log only, and a tail cut off the audit trail cannot be caught from a file (see docs/compliance.md)")
	}
	c, err := newCheckpointer(cfg.AuditCheckpoints, st, ring, log.With(slog.String("component", "audit checkpoints")))
	if err != nil {
		return nil, err
	}
	c.origin = cmp.Or(cfg.AuditOrigin, checkpoint.DefaultOrigin)
	c.witnesses = newWitnesses(cfg.AuditWitnessPolicy, c.log, obs)
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &runningCheckpoints{c: c, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		c.run(runCtx, checkpointInterval)
	}()
	return r, nil
}

// logGenesis says what opening the database did with a genesis the migration left unsealed.
func logGenesis(g auditlog.GenesisOpening, ring *secrets.Ring, log *slog.Logger) {
	switch {
	case !g.Unsealed:
	case !g.Sealed && g.Left != nil:
		log.Error("the audit chain's genesis is unsealed, and the trail does not prove where the chain begins: it is left unsealed; run `backoffice audit verify` to see what changed",
			slog.Int64("last_unlinked_seq", g.LastUnlinked), slog.String("why", g.Left.Error()))
	case g.OnTrust && g.LastUnlinked > 0: // a new database's genesis (nothing before the chain) is no news
		log.Warn("sealed the audit chain's genesis: every event after it must be linked. Expected once, on the first start after the upgrade that made it; otherwise its seal (and links) had been removed, which only checkpoints show (configure BACKOFFICE_AUDIT_CHECKPOINTS)",
			slog.Int64("last_unlinked_seq", g.LastUnlinked), slog.String("key_id", ring.ActiveKeyID()))
	case g.LastUnlinked > 0:
		log.Warn("sealed the audit chain's genesis, as the checkpoints prove it: every event after it must be linked",
			slog.Int64("last_unlinked_seq", g.LastUnlinked), slog.String("key_id", ring.ActiveKeyID()))
	}
}

// stop ends the ticker and signs a last checkpoint.
func (r *runningCheckpoints) stop(ctx context.Context) {
	r.cancel()
	<-r.done
	r.c.tick(context.WithoutCancel(ctx))
}
