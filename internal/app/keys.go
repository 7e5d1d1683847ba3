package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"backoffice/internal/auditlog"
	"backoffice/internal/checkpoint"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
)

const actionKeysRewrap = "keys.rewrap"

// Rewrap batch sizes: each batch is one transaction, so it must stay short (writers queue behind
// it on SQLite), yet large enough that millions of values do not take millions of round trips.
const (
	defaultRewrapBatch = 500
	maxRewrapBatch     = 10000
)

func runKeys(ctx context.Context, env Env, cfg Config, args []string) error {
	return runGroup(ctx, env, cfg, "keys", args, map[string]runFunc{"status": runKeysStatus, "rewrap": runKeysRewrap})
}

func runKeysStatus(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("keys status")
	cfg.databaseFlags(fs)
	if err := cfg.parseNoArgs(fs, args); err != nil {
		return err
	}
	ring, err := masterRing(cfg)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, cfg, ring)
	if err != nil {
		return err
	}
	defer st.Close()
	counts, err := st.SSNKeyCounts(ctx)
	if err != nil {
		return err
	}
	needs, err := readKeyNeeds(ctx, cfg, st, ring)
	if err != nil {
		return err
	}
	if err := printKeyStatus(env.Stdout, ring, counts, needs); err != nil {
		return err
	}
	weak, err := weakCredentials(ctx, st)
	if err != nil {
		return err
	}
	if err := printWeakCredentials(env.Stdout, weak, cfg.weakAllowed()); err != nil {
		return err
	}
	if err := errors.Join(missingKeys(keyStates(ring, counts)), printTrailKeys(env.Stdout, ring, needs)); err != nil {
		return err
	}
	if len(weak) > 0 && !cfg.weakAllowed() {
		return weakError(weak)
	}
	return nil
}

// keyNeeds is what, besides SSNs, may still need a master key: audit events linked under it and
// not yet anchored under the active key (a verify without it could not check them), the audit
// chain's genesis sealed under it, and the newest checkpoint signed under it.
type keyNeeds struct {
	unanchored      map[string]int64
	genesisKey      string
	checkpointKey   string
	checkpointsFile string
	// pruneKey is the key the newest prune's note is signed under ("" when never pruned).
	pruneKey string
	// trail is every key id the audit trail's links name, anchors the anchors that may cover
	// those the ring lacks.
	trail   []auditlog.KeyUse
	anchors []auditlog.Anchor
}

func readKeyNeeds(ctx context.Context, cfg Config, st *store.Store, ring *secrets.Ring) (keyNeeds, error) {
	var n keyNeeds
	var err error
	if n.unanchored, n.genesisKey, err = st.AuditKeyNeeds(ctx, ring.ActiveKeyID()); err != nil {
		return n, err
	}
	if n.trail, n.anchors, _, err = st.AuditKeyUses(ctx); err != nil {
		return n, err
	}
	if n.pruneKey, err = pruneKeyID(ctx, st); err != nil {
		return n, err
	}
	last, ok, err := lastCheckpoint(cfg)
	if ok {
		n.checkpointKey, n.checkpointsFile = last.KeyID, last.File
	}
	return n, err
}

// pruneKeyID is the key the trail's newest prune note is signed under ("" when never pruned). A
// record that is not a prune note cannot say, and fails: audit verify names it.
func pruneKeyID(ctx context.Context, st *store.Store) (string, error) {
	note, found, err := st.AuditPruneNote(ctx)
	if err != nil || !found {
		return "", err
	}
	p, err := checkpoint.ParsePrune(note)
	if err != nil {
		return "", fmt.Errorf("the audit trail's newest prune record is not a prune note (%v): run `backoffice audit verify`", err)
	}
	return p.KeyID, nil
}

// reasons says what still needs key id, beside SSNs.
func (n keyNeeds) reasons(id string) []string {
	var out []string
	if c := n.unanchored[id]; c > 0 {
		out = append(out, fmt.Sprintf("%d audit events are linked under key %s and not yet anchored under the active key: run `backoffice keys rewrap` (it anchors them) before removing it from the ring.", c, id))
	}
	if n.genesisKey == id {
		out = append(out, fmt.Sprintf("The audit chain's genesis is sealed under key %s: run `backoffice keys rewrap` with the new ring (it seals it anew) before removing it.", id))
	}
	if n.pruneKey == id {
		out = append(out, fmt.Sprintf("The audit trail's newest prune note is signed under key %s: run `backoffice keys rewrap` with the new ring (it signs the note anew under the active key) before removing it.", id))
	}
	if n.checkpointKey == id {
		out = append(out, fmt.Sprintf("The newest audit checkpoint in %s is signed under key %s: let serve sign one under the active key (it does within a minute of the next event) before removing it.", n.checkpointsFile, id))
	}
	return out
}

// lackedLinks is a key id the audit trail's links name that a ring lacks: by is the anchor under a
// key of the ring that covers its links (zero when none does), head whether the trail's newest
// link is one of them.
type lackedLinks struct {
	use  auditlog.KeyUse
	by   auditlog.Anchor
	head bool
}

// trailKeysLacked lists the key ids of the trail's links that the ring lacks, each with the anchor
// under a key of the ring that covers its links, if one does.
func trailKeysLacked(ring *secrets.Ring, uses []auditlog.KeyUse, anchors []auditlog.Anchor) []lackedLinks {
	held := ring.KeyIDs()
	var newest int64
	for _, u := range uses {
		newest = max(newest, u.Last)
	}
	var out []lackedLinks
	for _, u := range uses {
		if slices.Contains(held, u.KeyID) {
			continue
		}
		l := lackedLinks{use: u, head: u.Last == newest}
		for _, a := range anchors {
			if slices.Contains(held, a.KeyID) && a.Seq > u.Last && a.Covers >= u.Last && a.Covers > l.by.Covers {
				l.by = a
			}
		}
		out = append(out, l)
	}
	return out
}

// ringGaps is the one rule of what a ring must hold to open the data and continue the audit trail:
// every key sealing stored SSNs, every key of the trail's links that no anchor under a key of the
// ring covers (the key of the trail's head among them: nothing after the head covers it, and a
// new link follows it), and the key of the genesis's seal. It returns the key ids missing, each
// followed by what needs it. keys status prints the same findings and exits 1 on them; serve and
// import refuse to start on those of the SSNs, the head and the genesis, keys rewrap on the SSNs'
// (checkRingHolds).
func ringGaps(ring *secrets.Ring, counts []store.KeyCount, uses []auditlog.KeyUse, anchors []auditlog.Anchor, genesisKey, pruneKey string) []string {
	var ids []string
	needs := map[string][]string{}
	need := func(id, what string) {
		if needs[id] == nil {
			ids = append(ids, id)
		}
		needs[id] = append(needs[id], what)
	}
	for _, s := range keyStates(ring, counts) {
		if s.state == stateMissing {
			need(s.id, fmt.Sprintf("%d %s", s.values, plural(s.values != 1, "SSNs", "SSN")))
		}
	}
	for _, l := range trailKeysLacked(ring, uses, anchors) {
		if l.by.Seq > 0 {
			continue
		}
		what := fmt.Sprintf("audit links seq %d to %d", l.use.First, l.use.Last)
		if l.head {
			what += " with the trail's head"
		}
		need(l.use.KeyID, what)
	}
	if genesisKey != "" && !slices.Contains(ring.KeyIDs(), genesisKey) {
		need(genesisKey, "the genesis's seal")
	}
	if pruneKey != "" && !slices.Contains(ring.KeyIDs(), pruneKey) {
		need(pruneKey, "the newest prune's note")
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprintf("%s (%s)", id, strings.Join(needs[id], ", "))
	}
	return out
}

// checkRingHolds refuses, before anything is written, a ring that lacks a key the data needs
// (ringGaps): what starts with it would seal or link under keys the right ring cannot check, or
// answer 500 for the SSNs it cannot open. Without trail, only the SSNs' keys are checked. Of the
// trail it reads the head's key and the genesis's (AuditHeadKeys), so that a start does not grow
// with the trail; older links under keys the ring lacks are keys status's and audit verify's to
// report.
func checkRingHolds(ctx context.Context, st *store.Store, ring *secrets.Ring, trail bool) error {
	counts, err := st.SSNKeyCounts(ctx)
	if err != nil {
		return err
	}
	var uses []auditlog.KeyUse
	var genesisKey, pruneKey string
	if trail {
		var head auditlog.KeyUse
		if head, genesisKey, err = st.AuditHeadKeys(ctx); err != nil {
			return err
		}
		if head.KeyID != "" {
			uses = []auditlog.KeyUse{head}
		}
		if pruneKey, err = pruneKeyID(ctx, st); err != nil {
			return err
		}
	}
	gaps := ringGaps(ring, counts, uses, nil, genesisKey, pruneKey)
	if len(gaps) == 0 {
		return nil
	}
	return fmt.Errorf("the master key ring lacks keys the data needs: %s; add them to BACKOFFICE_MASTER_KEYS under the same ids (`backoffice keys status` says what needs each); if you never had such a key, the data was altered: run `backoffice audit verify` with your ring",
		strings.Join(gaps, "; "))
}

// printTrailKeys names every key id the audit trail mentions that the ring lacks: for links an
// anchor under a key of the ring covers, that they need it no more; for any other, and for a
// genesis sealed under such a key, a warning, and an error for keys status's exit status (the
// findings of ringGaps). It does not verify (audit verify does): a key id no ring of the
// operator's ever held was written by hand.
func printTrailKeys(w io.Writer, ring *secrets.Ring, n keyNeeds) error {
	held := ring.KeyIDs()
	var missing []string
	for _, l := range trailKeysLacked(ring, n.trail, n.anchors) {
		u, by := l.use, l.by
		if by.Seq > 0 {
			fmt.Fprintf(w, "Key %s is not in the ring: its %d audit links (seq %d to %d) are covered by the anchor at seq %d, under key %s; the audit proof does not need it.\n", u.KeyID, u.Links, u.First, u.Last, by.Seq, by.KeyID)
			continue
		}
		missing = append(missing, u.KeyID)
		fmt.Fprintf(w, "WARNING: %d audit links (seq %d to %d) are made under key %s, which is not in the ring, and no anchor under a key of the ring covers them: audit verify cannot check them with this ring. Add %s back to BACKOFFICE_MASTER_KEYS if it is one of yours; if you never had a key %s, the trail was altered: run `backoffice audit verify`.\n", u.Links, u.First, u.Last, u.KeyID, u.KeyID, u.KeyID)
	}
	if p := n.pruneKey; p != "" && !slices.Contains(held, p) {
		missing = append(missing, p+" (the newest prune)")
		fmt.Fprintf(w, "WARNING: the audit trail's newest prune note is signed under key %s, which is not in the ring: audit verify cannot check the prune without it, and says the trail is broken. Add it back if it is one of yours; if you never had a key %s, the note was forged: run `backoffice audit verify`.\n", p, p)
	}
	if g := n.genesisKey; g != "" && !slices.Contains(held, g) {
		missing = append(missing, g+" (the genesis)")
		fmt.Fprintf(w, "WARNING: the audit chain's genesis is sealed under key %s, which is not in the ring: add it back if it is one of yours; if you never had a key %s, the genesis was altered: run `backoffice audit verify`.\n", g, g)
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("the audit trail names keys missing from the ring that nothing else covers (%s): see above", strings.Join(missing, ", "))
}

// missingKeys fails keys status when SSNs are sealed under a key the ring lacks, so that a script
// or a deployment check stops on it rather than reading past a warning.
func missingKeys(states []keyState) error {
	var ids []string
	var values int64
	for _, s := range states {
		if s.state == stateMissing {
			ids, values = append(ids, s.id), values+s.values
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return fmt.Errorf("%d SSNs are sealed under keys missing from the ring (%s): add them back to BACKOFFICE_MASTER_KEYS", values, strings.Join(ids, ", "))
}

// stateMissing marks a key id the data uses and the ring lacks.
const stateMissing = "MISSING"

// keyState is one key id as status shows it: in the ring (active or not) or missing from it.
type keyState struct {
	id, state string
	values    int64
}

// keyStates lists every key of the ring, active first, then every key id found in the data that
// the ring lacks.
func keyStates(ring *secrets.Ring, counts []store.KeyCount) []keyState {
	byID := map[string]int64{}
	for _, c := range counts {
		byID[c.KeyID] = c.Values
	}
	var out []keyState
	for i, id := range ring.KeyIDs() {
		state := "in ring"
		if i == 0 {
			state = "active"
		}
		out = append(out, keyState{id: id, state: state, values: byID[id]})
	}
	for _, c := range counts {
		if !slices.Contains(ring.KeyIDs(), c.KeyID) {
			out = append(out, keyState{id: c.KeyID, state: stateMissing, values: c.Values})
		}
	}
	return out
}

func printKeyStatus(w io.Writer, ring *secrets.Ring, counts []store.KeyCount, needs keyNeeds) error {
	states := keyStates(ring, counts)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY ID\tSTATE\tSSNS")
	for _, s := range states {
		fmt.Fprintf(tw, "%s\t%s\t%d\n", s.id, s.state, s.values)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range states {
		switch {
		case s.state == stateMissing:
			fmt.Fprintf(w, "WARNING: %d SSNs are sealed under key %s, which is not in the ring: decrypting them answers 500 until it is added back.\n", s.values, s.id)
		case s.state == "in ring":
			printKeyNeeds(w, s, needs.reasons(s.id))
		}
	}
	return nil
}

// printKeyNeeds says what still needs a key of the ring other than the active one, or that
// nothing does and it can be removed.
func printKeyNeeds(w io.Writer, s keyState, reasons []string) {
	if s.values > 0 {
		fmt.Fprintf(w, "%d SSNs still use key %s: run `backoffice keys rewrap` before removing it from the ring.\n", s.values, s.id)
	}
	for _, r := range reasons {
		fmt.Fprintln(w, r)
	}
	if s.values == 0 && len(reasons) == 0 {
		fmt.Fprintf(w, "Nothing needs key %s any more (no SSN, unanchored audit link, genesis seal, prune note or checkpoint): it can be removed from the ring.\n", s.id)
	}
}

func runKeysRewrap(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("keys rewrap")
	cfg.databaseFlags(fs)
	batch := fs.Int("batch", defaultRewrapBatch, fmt.Sprintf("values per transaction (1 to %d)", maxRewrapBatch))
	actorID := actorFlag(fs)
	if err := cfg.parseNoArgs(fs, args); err != nil {
		return err
	}
	if *batch < 1 || *batch > maxRewrapBatch {
		return usagef("--batch must be from 1 to %d", maxRewrapBatch)
	}
	ring, err := masterRing(cfg)
	if err != nil {
		return err
	}
	st, actor, err := openStoreAs(ctx, cfg, *actorID)
	if errors.Is(err, errTrailHeld) {
		return fmt.Errorf("%w: %w", ErrCannotCheck, err) // as verifyBeforeAnchor refuses it
	}
	if err != nil {
		return err
	}
	defer st.Close()
	v, notes, err := verifyBeforeAnchor(ctx, cfg, st, ring)
	if err != nil {
		return err
	}
	// The walk just made proves the trail's keys (a link under a key the ring lacks is believed
	// only where an anchor or a checkpoint under a key it holds covers it); the SSNs' keys it
	// does not see.
	if err := checkRingHolds(ctx, st, ring, false); err != nil {
		return fmt.Errorf("keys rewrap refused, nothing was changed: %w", err)
	}
	for _, n := range notes {
		fmt.Fprintln(env.Stderr, "rewrap: checkpoints:", n)
	}
	if err := startRewrap(ctx, st, ring, actor, v); err != nil {
		return err
	}
	progress := func(b store.RewrapBatch, t rewrapTotals) {
		fmt.Fprintf(env.Stderr, "rewrap: moved %d in this batch, %d in all\n", b.Moved, t.Moved)
	}
	totals, runErr := rewrapAll(ctx, st, ring, *batch, progress)
	if err := finishRewrap(ctx, env, st, ring, actor, totals, runErr); err != nil {
		return err
	}
	// After the SSNs: a prune note that cannot be signed anew must not hold up their move.
	return resignPrune(ctx, cfg, st, ring, v, time.Now())
}

// verifyBeforeAnchor walks the whole audit chain, against the configured checkpoints, before
// keys rewrap anchors it: an anchor covers only a trail verified just before it. A trail that does
// not verify, checkpoints it cannot check, or the trail's tables not as the migrations made them
// (store.CheckTrailCatalog) refuse the run, which then changes nothing. notes name the checkpoints
// file's torn lines, left out.
func verifyBeforeAnchor(ctx context.Context, cfg Config, st *store.Store, ring *secrets.Ring) (auditlog.Verified, []string, error) {
	// Tables that may drop events as they are written leave a trail that verifies: anchoring it
	// would vouch for it.
	if err := st.CheckTrailCatalog(ctx); err != nil {
		return auditlog.Verified{}, nil, rewrapRefused{why: err, kind: ErrCannotCheck}
	}
	expects, notes, err := configuredExpects(cfg, ring)
	if err == nil {
		var rep auditlog.ChainReport
		if rep, err = st.VerifyAuditChain(ctx, ring, expects); err == nil {
			var v auditlog.Verified
			if v, err = rep.Verified(); err == nil {
				return v, notes, nil
			}
		}
	}
	kind := ErrCannotCheck
	if errors.As(err, new(*auditlog.ChainBreak)) {
		kind = errAuditChainBroken
	}
	return auditlog.Verified{}, nil, rewrapRefused{why: err, kind: kind}
}

// rewrapRefused is a keys rewrap that did not run because the trail does not verify: exit 1 when
// it is broken, 3 when it cannot be checked, as audit verify's.
type rewrapRefused struct{ why, kind error }

func (r rewrapRefused) Error() string {
	return "keys rewrap refused, nothing was changed: it anchors the audit trail, and an anchor covers only a trail verified just before it: " +
		r.why.Error() + " (`backoffice audit verify` says more)"
}

func (r rewrapRefused) Unwrap() []error { return []error{r.why, r.kind} }

// startRewrap puts the run on record before it changes anything, so that a run killed outright
// (kill -9, a crash) still leaves its event; then it seals the audit chain's genesis under the
// active key and anchors the trail as v verified it there: the links made under the key being
// retired stay proven once it leaves the ring.
func startRewrap(ctx context.Context, st *store.Store, ring *secrets.Ring, actor domain.ID, v auditlog.Verified) error {
	now := time.Now().UTC()
	started := domain.AuditEvent{At: now, ActorUserID: actor, Action: actionKeysRewrap, TargetID: ring.ActiveKeyID(),
		Outcome: domain.OutcomeGranted, Detail: "started: moving SSNs to key " + ring.ActiveKeyID()}
	if err := st.RecordAudit(ctx, started); err != nil {
		return err
	}
	if _, err := st.SealAuditGenesis(ctx, v); err != nil {
		return err
	}
	return st.AnchorAudit(ctx, v, domain.AuditEvent{At: now, ActorUserID: actor, Outcome: domain.OutcomeGranted})
}

// resignPrune signs the newest prune's note, as v checked it, anew under the active key when
// another key signed it: the old key can then leave the ring, after which a prune note under it
// (one forged with the key leaked) is a break. It signs only a note the prune notes file beside
// the checkpoints holds: every prune appends its note there before it removes anything, out of a
// database attacker's reach, so a note found only in the database (written with the old key
// before the rotation) is not vouched for anew. The note signed anew goes to the notes file,
// where the auditor's program reads the newest, once the database holds it.
func resignPrune(ctx context.Context, cfg Config, st *store.Store, ring *secrets.Ring, v auditlog.Verified, at time.Time) error {
	old, found := v.Prune()
	if !found {
		return nil
	}
	active := ring.ActiveKeyID()
	notSigned := func(why string) error {
		return fmt.Errorf("%w: keys rewrap: the newest prune's note (below seq %d, signed under key %s) was not signed anew: %s; until it is, keep key %s in the ring",
			ErrCannotCheck, old.Below, old.KeyID, why, old.KeyID)
	}
	if cfg.AuditCheckpoints == "" {
		if old.KeyID == active {
			return nil
		}
		return notSigned("BACKOFFICE_AUDIT_CHECKPOINTS is not set, and the prune notes file beside it is where a prune's note is checked before it is signed anew (set it, then run keys rewrap again)")
	}
	path := cfg.AuditCheckpoints + prunedNotesSuffix
	held, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("keys rewrap: the prune notes file: %w", err)
	}
	if old.KeyID == active {
		// Signed anew by a run cut short before the notes file took it.
		if bytes.Contains(held, old.Note) {
			return nil
		}
		return appendNewestPrune(ctx, st, path, old.Note)
	}
	if !bytes.Contains(held, old.Note) {
		return notSigned(path + " does not hold it, and every prune appends its note there before it removes anything: a note found only in the database may have been written there by someone holding that key and the database (run `backoffice audit verify`, compare the note with the notes file and its backups, and find out where it came from)")
	}
	key, err := ring.CheckpointKey(active)
	if err != nil {
		return err
	}
	p, err := checkpoint.SignPrune(checkpoint.Prune{Origin: old.Origin, Below: old.Below, Root: old.Root, Link: old.Link,
		Digest: old.Digest, Archive: old.Archive, KeyID: active}, at, key)
	if err != nil {
		return err
	}
	if err := st.ResignAuditPrune(ctx, v, p); err != nil {
		return err
	}
	return appendNewestPrune(ctx, st, path, p.Note)
}

// appendNewestPrune appends note to the prune notes file at path while it is still the trail's
// newest prune's: a prune made meanwhile appended its own, which must stay the file's newest.
func appendNewestPrune(ctx context.Context, st *store.Store, path string, note []byte) error {
	newest, _, err := st.AuditPruneNote(ctx)
	if err != nil {
		return err
	}
	if !bytes.Equal(newest, note) {
		return fmt.Errorf("keys rewrap: the trail was pruned again meanwhile; %s keeps that prune's note as its newest (run keys rewrap again)", path)
	}
	if err := appendSynced(path, note); err != nil {
		return fmt.Errorf("keys rewrap: the prune note signed anew: %s: %w", path, err)
	}
	return nil
}

// rewrapTotals adds up the batches of one run.
type rewrapTotals struct {
	Moved, Changed, Batches int
	Failed                  []store.RewrapFailure
}

// rewrapAll moves every SSN not under the ring's active key to it, batch after batch, until a
// batch finds nothing more. It stops between batches when ctx ends; a batch cut short rolls
// back, and the next run carries on from what the data shows. afterBatch, when set, sees each
// batch (progress output; tests use it to interleave requests and to interrupt).
func rewrapAll(ctx context.Context, st *store.Store, ring store.Rekeyer, batch int, afterBatch func(store.RewrapBatch, rewrapTotals)) (rewrapTotals, error) {
	var t rewrapTotals
	var after domain.ID
	for {
		if err := ctx.Err(); err != nil {
			return t, err
		}
		b, err := st.RewrapSSNs(ctx, ring, after, batch)
		if err != nil {
			return t, err
		}
		if b.Seen == 0 {
			return t, nil
		}
		t.Moved, t.Changed, t.Batches = t.Moved+b.Moved, t.Changed+b.Changed, t.Batches+1
		t.Failed = append(t.Failed, b.Failed...)
		after = b.Last
		if afterBatch != nil {
			afterBatch(b, t)
		}
	}
}

// finishRewrap reports a run, whether it finished or not: what moved, what is left under each old
// key, what failed, and an audit event saying the same.
func finishRewrap(ctx context.Context, env Env, st *store.Store, ring *secrets.Ring, actor domain.ID, t rewrapTotals, runErr error) error {
	// An interrupted run is still reported and audited: it did move values.
	ctx = context.WithoutCancel(ctx)
	counts, err := st.SSNKeyCounts(ctx)
	if err != nil {
		return errors.Join(runErr, err)
	}
	summary := rewrapSummary(ring, t, counts)
	fmt.Fprintln(env.Stdout, summary)
	for _, f := range t.Failed {
		fmt.Fprintf(env.Stderr, "rewrap: principal %s (key %s) could not be opened: %v\n", f.PrincipalID, f.KeyID, f.Err)
	}
	detail := summary
	if runErr != nil {
		detail += " (interrupted: " + runErr.Error() + ")"
	}
	event := domain.AuditEvent{At: time.Now().UTC(), ActorUserID: actor, Action: actionKeysRewrap, TargetID: ring.ActiveKeyID(),
		Outcome: domain.OutcomeGranted, Detail: detail}
	if err := st.RecordAudit(ctx, event); err != nil {
		return errors.Join(runErr, err)
	}
	switch {
	case runErr != nil:
		return fmt.Errorf("rewrap stopped after moving %d values: %w; run keys rewrap again to finish", t.Moved, runErr)
	case len(t.Failed) > 0:
		return fmt.Errorf("rewrap: %d values could not be opened (listed above); they stay under their old key", len(t.Failed))
	}
	return nil
}

// rewrapSummary is one line: what moved where, and how many values each old key still seals.
func rewrapSummary(ring *secrets.Ring, t rewrapTotals, counts []store.KeyCount) string {
	var left []string
	for _, c := range counts {
		if c.KeyID != ring.ActiveKeyID() {
			left = append(left, fmt.Sprintf("%s=%d", c.KeyID, c.Values))
		}
	}
	remaining := "none"
	if len(left) > 0 {
		remaining = strings.Join(left, ", ")
	}
	s := fmt.Sprintf("moved %d SSNs to key %s; still under old keys: %s", t.Moved, ring.ActiveKeyID(), remaining)
	if t.Changed > 0 {
		s += fmt.Sprintf("; %d changed while being moved (run again)", t.Changed)
	}
	if len(t.Failed) > 0 {
		s += fmt.Sprintf("; %d could not be opened", len(t.Failed))
	}
	return s
}

// checkKeyCoverage logs, at start-up, SSNs still under an old key (a rotation not yet finished),
// so that it does not go unnoticed. A key the ring lacks stopped the start before (checkRingHolds).
func checkKeyCoverage(ctx context.Context, st *store.Store, ring *secrets.Ring, log *slog.Logger) error {
	counts, err := st.SSNKeyCounts(ctx)
	if err != nil {
		return err
	}
	for _, s := range keyStates(ring, counts) {
		if s.state == "in ring" && s.values > 0 {
			log.Info("SSNs still use an old key; run `backoffice keys rewrap`", slog.String("key_id", s.id), slog.Int64("values", s.values))
		}
	}
	return nil
}
