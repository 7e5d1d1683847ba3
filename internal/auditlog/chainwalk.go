package auditlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"backoffice/internal/checkpoint"
	"backoffice/internal/domain"

	"golang.org/x/mod/sumdb/tlog"
)

// ChainVerifier checks the audit chain's links and its genesis's seal: the MAC under each key of
// a ring, by id, and the ids the ring holds (*secrets.Ring is one). A link or a seal that names a
// key the ring lacks is tried under every key it holds: one that holds under another was
// relabelled by hand, which is a break, not a key the ring lacks.
type ChainVerifier interface {
	ChainMAC(keyID string, message []byte) ([]byte, error)
	KeyIDs() []string
}

// ChainExpect is something kept outside the database that the chain must still hold: the link of
// an event recorded by hand (Seq 0: anywhere in the chain), or a signed checkpoint (the link of
// event Seq and the digest of the trail up to it, see ChainDigest).
type ChainExpect struct {
	Seq    int64
	Link   []byte
	Digest []byte
	// Root is the audit tree's root at Seq that the checkpoint signed (nil for a checkpoint of
	// the format before the tree, which signed none).
	Root []byte
	// What names it in a report ("the checkpoint of 2026-11-25T12:00:00Z (FILE line 3)").
	What string
}

// ChainReport is what a walk of the chain found.
type ChainReport struct {
	// Events counts every event; Legacy those written before the chain existed (numbered, not
	// linked), which precede the first link.
	Events, Legacy int64
	// Head is the newest event (zero when there are none): its sequence number, id and link;
	// Digest is the digest of the trail up to it.
	Head   domain.AuditEvent
	Digest []byte
	// Matched counts the expectations (checkpoints, a recorded head) the chain holds; Covered is
	// the newest event a checkpoint or an anchor fixes (0: none).
	Matched int
	Covered int64
	// LinksUnchecked counts the links not checked for want of a key (a walk without a ring).
	LinksUnchecked int64
	// Break is the first event where the chain does not hold, nil when it is whole.
	Break *ChainBreak
	// Unchecked, when the chain did not break, is what could not be checked (a key the ring
	// lacks, a genesis nothing proves): neither intact nor broken.
	Unchecked *ChainGap
	// Notes are what the walk found that neither breaks the chain nor leaves it unchecked.
	Notes []string
	// PrunedBelow is the seq the trail was pruned below by the retention policy (0: never), and
	// Prune its signed note, once checked (the walk starts there: see resumeAtPrune).
	PrunedBelow int64
	Prune       checkpoint.Prune
	// verified is the trail as proven, when it is (see Verified); trusting is the same but for a
	// genesis nothing proves, which only its first sealing may accept (onTrust).
	verified, trusting Verified
}

// Verified is the trail the walk proved, for a checkpoint, an anchor or a seal to cover: an error
// saying why not when it broke, could not be checked, or was walked without the ring.
func (r ChainReport) Verified() (Verified, error) {
	switch {
	case r.Break != nil:
		return Verified{}, r.Break
	case r.Unchecked != nil:
		return Verified{}, r.Unchecked
	case !r.verified.ok:
		return Verified{}, errNotVerified
	}
	return r.verified, nil
}

// onTrust is Verified, but for a genesis the migration left unsealed beside a trail that has no
// link to prove where the chain begins: what the first sealing of a trail from before the chain
// takes on trust.
func (r ChainReport) onTrust() (Verified, error) {
	if r.Break == nil && r.trusting.ok {
		return r.trusting, nil
	}
	return r.Verified()
}

// errNotVerified is a Verified no walk made, or one made without the ring (links unchecked).
var errNotVerified = errors.New("store: the audit trail was not verified with the master key ring: nothing is signed, sealed or anchored unverified")

// Verified is the audit trail from seq 1 to Seq as a walk of it just proved it: every event from
// the genesis on, by its link under a key of the ring, or by a digest that an anchor or a
// checkpoint under such a key fixed. It is the only thing that signs and seals accept: a
// checkpoint (checkpoint.Sign), an anchor (AnchorAudit), the genesis's seal (SealAuditGenesis).
// Only a walk with the ring makes one (ChainReport.Verified, Follower.Next); the zero value
// is refused.
type Verified struct {
	ok     bool
	seq    int64
	head   string
	digest []byte
	// lastUnlinked is where the chain begins, as proven; genesisKnown is false for a walk resumed
	// from a checkpoint, which does not see the start.
	lastUnlinked int64
	genesisKnown bool
	// onTrust: the genesis is taken on trust (see ChainReport.onTrust).
	onTrust bool
	// treeSize and treeRoot are the audit tree the walk checked (Tree).
	treeSize int64
	treeRoot tlog.Hash
	// prune is the prune the walk started from, its note checked under a key of the ring (zero
	// for a trail never pruned).
	prune checkpoint.Prune
}

// Seq is the newest event proven; Head its link (hex, "" for an unlinked event); Digest the
// digest of the trail up to it (see ChainDigest).
func (v Verified) Seq() int64     { return v.seq }
func (v Verified) Head() string   { return v.head }
func (v Verified) Digest() []byte { return bytes.Clone(v.digest) }

// Prune is the newest prune, which the walk started from and whose note it checked under a key
// of the ring; found is false for a trail never pruned.
func (v Verified) Prune() (p checkpoint.Prune, found bool) { return v.prune, v.prune.Below > 0 }

// Err is nil when v proves the trail: a walk with the ring made it, taking nothing on trust.
// Signers call it before they sign.
func (v Verified) Err() error {
	if !v.ok || v.onTrust {
		return errNotVerified
	}
	return nil
}

// sealable is Err for the genesis's seal, which also takes a trail from before the chain on
// trust the first time.
func (v Verified) sealable() error {
	if !v.ok || !v.genesisKnown {
		return errNotVerified
	}
	return nil
}

// ChainBreak names the first event at which the chain does not hold, and why: one event (Seq),
// or, where a digest is all that shows it, some event in Seq to To; Missing when those events
// are gone.
type ChainBreak struct {
	Seq, To int64
	Missing bool
	ID      domain.ID
	Reason  string
}

func (b *ChainBreak) Error() string {
	switch {
	case b.To > b.Seq:
		return fmt.Sprintf("audit chain broken in seq %d-%d: %s", b.Seq, b.To, b.Reason)
	case b.ID == "":
		return fmt.Sprintf("audit chain broken at seq %d: %s", b.Seq, b.Reason)
	}
	return fmt.Sprintf("audit chain broken at seq %d (event %s): %s", b.Seq, b.ID, b.Reason)
}

// Where names what is bad as precisely as it is known: one event, some event of a range, or
// events that are missing.
func (b *ChainBreak) Where() string {
	switch {
	case b.Missing && b.To > b.Seq:
		return fmt.Sprintf("seq %d-%d missing", b.Seq, b.To)
	case b.Missing:
		return fmt.Sprintf("seq %d missing", b.Seq)
	case b.To > b.Seq:
		return fmt.Sprintf("an event in seq %d-%d", b.Seq, b.To)
	case b.ID != "":
		return fmt.Sprintf("seq %d (event %s)", b.Seq, b.ID)
	}
	return fmt.Sprintf("seq %d", b.Seq)
}

// ChainGap is a stretch of the chain that could not be checked, and why.
type ChainGap struct {
	From, To int64
	Reason   string
	// genesis: what could not be checked is the genesis alone; tree: the audit tree's rows of
	// these events, not built yet.
	genesis, tree bool
}

// TreeNotBuilt tells a gap of the audit tree's rows not built yet (events written by a release
// before the tree, until a process given the ring builds them), which a walk begun again once
// they are built can check.
func (g *ChainGap) TreeNotBuilt() bool { return g.tree }

func (g *ChainGap) Error() string {
	if g.From == 0 {
		return "cannot check the audit chain: " + g.Reason
	}
	return fmt.Sprintf("cannot check the audit chain from seq %d to %d: %s", g.From, g.To, g.Reason)
}

// ChainWalk checks one event after another, in sequence order: numbered from 1 without gaps,
// unlinked only before the chain began (where its genesis, or its first link, says), every link
// the MAC of the one before and the event under a key of the ring, every anchor's digest that of
// the trail it names, and every expectation met. It is the one verifier: `audit verify` (of the
// database or of an export), the import of an export's chain, and, before anything is signed,
// sealed or anchored, the checkpoint signer (Follower) and `keys rewrap` walk with it.
type ChainWalk struct {
	ver     ChainVerifier // nil: links are not checked (an auditor with an export and no key)
	genesis *genesisState // nil: not known (an export)
	rep     ChainReport
	prev    []byte
	// firstLink is the seq of the first linked event walked (0: none yet); begun: a walk resumed
	// where the chain had begun already.
	firstLink int64
	begun     bool
	// checked is set once a link under a key of the ring held: keys change forward only (at a
	// rotation), so a link under a key the ring lacks after it is believed only if an anchor or a
	// checkpoint covers it, and is a break otherwise.
	checked bool
	// keep holds the digests at the sequence numbers anchors name (nil until walked).
	keep    map[int64][]byte
	expects map[int64][]ChainExpect
	heads   []ChainExpect
	found   []bool
	// unheld are the runs of links under keys the ring lacks that nothing covers yet.
	unheld []unheldRun
	// covered is the newest event a digest under a key of the ring (an anchor, a checkpoint)
	// fixed: every event up to it is as that digest says.
	covered int64
	// tree checks the audit tree beside the events (nil: a walk of an export, which has none).
	tree *treeCheck
	// pruneGap is a prune the walk cannot check (a verifier without checkpoint keys); stopped:
	// the walk goes no further (nothing after such a prune can be checked).
	pruneGap *ChainGap
	stopped  bool
	// prunedGap is what the checkpoints given that fix only pruned events left unchecked (see
	// meetPrune); nil when nothing.
	prunedGap *ChainGap
}

// genesisState is the genesis as a walk judged it.
type genesisState struct {
	verdict      genesisVerdict
	why          string
	lastUnlinked int64
}

// unheldRun is consecutive links under one key the ring lacks.
type unheldRun struct {
	from, to  int64
	id        domain.ID // the first one's event
	keyID     string
	afterHeld bool // a link under a key of the ring held before it
}

// NewChainWalk starts a walk. anchored are the sequence numbers the trail's anchors name (the
// digests to keep; an anchor is believed only once its own link holds). With ver nil (no key)
// links are not checked, and g (the genesis) must be nil: a walk of an export.
func NewChainWalk(ver ChainVerifier, g *Genesis, anchored []int64, expects []ChainExpect) *ChainWalk {
	w := &ChainWalk{ver: ver, keep: map[int64][]byte{}, expects: map[int64][]ChainExpect{}}
	for _, s := range anchored {
		w.keep[s] = nil
	}
	for _, x := range expects {
		if x.Seq == 0 {
			w.heads = append(w.heads, x)
		} else {
			w.expects[x.Seq] = append(w.expects[x.Seq], x)
		}
	}
	w.found = make([]bool, len(w.heads))
	if g != nil && ver != nil {
		verdict, why := g.judge(ver)
		w.genesis = &genesisState{verdict: verdict, why: why, lastUnlinked: g.LastUnlinked}
		if verdict == genesisBroken {
			w.rep.Break = &ChainBreak{Seq: 1, Reason: why}
		}
	}
	return w
}

// resumeChainWalk carries on a walk from base, a checkpoint signed under a key of the ring: the
// trail up to base.Seq is as base fixed it, and head is its event as the trail holds it now.
func resumeChainWalk(ver ChainVerifier, g Genesis, base ChainExpect, head domain.AuditEvent) *ChainWalk {
	w := NewChainWalk(ver, &g, []int64{base.Seq}, nil)
	w.rep.Events, w.rep.Head, w.rep.Digest = base.Seq, head, base.Digest
	w.keep[base.Seq] = base.Digest
	w.prev, w.begun = base.Link, len(base.Link) > 0
	w.cover(base.Seq)
	return w
}

// stepRow checks the next row of audit_events as read (see scanAuditWalkRow).
func (w *ChainWalk) stepRow(r auditRow) bool {
	if w.rep.Break != nil || w.stopped {
		return false
	}
	next := w.rep.Events + 1
	switch {
	case !r.numbered:
		w.rep.Break = &ChainBreak{Seq: next, ID: r.e.ID, Reason: "an event with no sequence number follows the last one: inserted outside the chain, or its seq removed"}
		return false
	case r.bad != "" && r.e.Seq == next:
		w.rep.Break = &ChainBreak{Seq: next, ID: r.e.ID, Reason: "its row does not hold an event (" + r.bad + "): altered"}
		return false
	}
	return w.Step(r.e)
}

// Step checks the next event; false once the chain is broken (later events add nothing).
func (w *ChainWalk) Step(e domain.AuditEvent) bool {
	if w.rep.Break != nil || w.stopped {
		return false
	}
	broken := func(format string, args ...any) bool {
		w.rep.Break = &ChainBreak{Seq: e.Seq, ID: e.ID, Reason: fmt.Sprintf(format, args...)}
		return false
	}
	if next := w.rep.Events + 1; e.Seq != next {
		if e.Seq > next {
			w.rep.Break = &ChainBreak{Seq: next, To: e.Seq - 1, Missing: true,
				Reason: fmt.Sprintf("missing: removed, or renumbered (the next event is seq %d, %s)", e.Seq, e.ID)}
			return false
		}
		return broken("numbered out of order (after seq %d)", w.rep.Events)
	}
	link, err := hex.DecodeString(e.Hash)
	if err != nil || (e.Hash == "") != (e.ChainKeyID == "") || (e.Hash != "" && len(link) != sha256.Size) {
		return broken("its link is malformed (a link is 32 bytes, and needs a key id, and the reverse)")
	}
	linked := e.Hash != ""
	if ok := w.place(e, linked, broken); !ok {
		return false
	}
	if linked {
		if ok := w.checkLink(e, link, broken); !ok {
			return false
		}
		w.prev = link
	}
	digest, err := ChainDigest(w.rep.Digest, e)
	if err != nil {
		return broken("%v", err)
	}
	w.rep.Events++
	w.rep.Head, w.rep.Digest = e, digest
	if _, ok := w.keep[e.Seq]; ok {
		w.keep[e.Seq] = digest
	}
	for _, x := range w.expects[e.Seq] {
		same := bytes.Equal(x.Link, link)
		if !bytes.Equal(x.Digest, digest) || !same {
			w.rep.Break = w.differs(e.Seq, same, x.What+" signed")
			return false
		}
		w.rep.Matched++
		w.cover(e.Seq)
	}
	for i, x := range w.heads {
		if linked && bytes.Equal(x.Link, link) {
			w.found[i] = true
		}
	}
	if w.tree != nil {
		w.tree.pending = append(w.tree.pending, e)
	}
	return true
}

// place checks that e is linked where the chain has begun, and unlinked before: where a sealed
// genesis says it begins, else before its first link.
func (w *ChainWalk) place(e domain.AuditEvent, linked bool, broken func(string, ...any) bool) bool {
	if g := w.genesis; g != nil && g.verdict == genesisSealed {
		last := g.lastUnlinked
		switch {
		case e.Seq <= last && linked:
			return broken("linked, but the genesis says the chain begins after seq %d", last)
		case e.Seq <= last:
			w.rep.Legacy++
		case !linked:
			return broken("no link, but the chain began after seq %d (its genesis): inserted, or its link removed", last)
		}
		if linked && w.firstLink == 0 && !w.begun {
			w.firstLink = e.Seq
		}
		return true
	}
	switch {
	case !linked && (w.firstLink > 0 || w.begun):
		return broken("no link after the chain began: inserted, or its link removed")
	case !linked:
		w.rep.Legacy++
	case w.firstLink == 0 && !w.begun:
		w.firstLink = e.Seq
	}
	return true
}

// checkLink checks e's link under its key, and an anchor's digest once its link holds. A link
// under a key the ring lacks is tried under every key it holds (relabelled if one makes it), and
// otherwise set aside until an anchor or a checkpoint under a key the ring holds covers it.
func (w *ChainWalk) checkLink(e domain.AuditEvent, link []byte, broken func(string, ...any) bool) bool {
	if w.ver == nil {
		w.rep.LinksUnchecked++
		return true
	}
	h, err := chainLink(w.ver, w.prev, e)
	if err != nil {
		return w.unheldLink(e, link)
	}
	if !bytes.Equal(h, link) {
		return broken("its link does not match: the event was altered, inserted, or follows an altered one")
	}
	w.checked = true
	if e.Action == ActionAnchor {
		return w.anchor(e, broken)
	}
	return true
}

// unheldLink handles a link that names a key the ring lacks.
func (w *ChainWalk) unheldLink(e domain.AuditEvent, link []byte) bool {
	for _, id := range w.ver.KeyIDs() {
		as := e
		as.ChainKeyID = id
		if h, err := chainLink(w.ver, w.prev, as); err != nil || !bytes.Equal(h, link) {
			continue
		}
		b := &ChainBreak{Seq: e.Seq, ID: e.ID, Reason: fmt.Sprintf("its link is made under key %s, which the ring holds, but the event names key %q: relabelled", id, e.ChainKeyID)}
		// Earlier links naming the same made-up key, which hold under no key, were altered too.
		for _, r := range w.unheld {
			if r.keyID == e.ChainKeyID {
				b = &ChainBreak{Seq: r.from, ID: r.id, Reason: fmt.Sprintf("its link names key %q, which the ring does not hold, and holds under no key it does, while seq %d, which names %q too, is linked under key %s: the key ids were written by hand, and this event altered", e.ChainKeyID, e.Seq, e.ChainKeyID, id)}
				break
			}
		}
		w.rep.Break = b
		return false
	}
	if n := len(w.unheld); n > 0 {
		if r := &w.unheld[n-1]; r.to == e.Seq-1 && r.keyID == e.ChainKeyID && r.afterHeld == w.checked {
			r.to = e.Seq
			return true
		}
	}
	w.unheld = append(w.unheld, unheldRun{from: e.Seq, to: e.Seq, id: e.ID, keyID: e.ChainKeyID, afterHeld: w.checked})
	return true
}

// anchor checks an anchor whose link held: the digest it names must be the trail's.
func (w *ChainWalk) anchor(e domain.AuditEvent, broken func(string, ...any) bool) bool {
	seq, digest, ok := parseAnchor(e.Detail)
	if !ok {
		return broken("an anchor whose detail names no events and digest")
	}
	if seq >= e.Seq {
		return broken("an anchor of events 1 to %d, which do not all precede it", seq)
	}
	kept := w.keep[seq]
	if kept == nil {
		// An anchor this walk was not told of (written after it began), or of events before
		// where it resumed: it fixes nothing here, and its link held.
		return true
	}
	if !bytes.Equal(kept, digest) {
		w.rep.Break = w.differs(seq, false, fmt.Sprintf("the anchor at seq %d (event %s) fixed", e.Seq, e.ID))
		return false
	}
	w.cover(seq)
	return true
}

// cover notes that a digest under a key of the ring fixed every event up to seq.
func (w *ChainWalk) cover(seq int64) {
	w.covered = max(w.covered, seq)
	w.rep.Covered = max(w.rep.Covered, seq)
	runs := w.unheld[:0]
	for _, r := range w.unheld {
		if r.to <= seq {
			continue
		}
		if r.from <= seq {
			r.from, r.id = seq+1, ""
		}
		runs = append(runs, r)
	}
	w.unheld = runs
}

// differs is the break when a digest that what fixed at seq is not the trail's: some event after
// the newest one a digest fixed before, up to seq, differs, which is all a digest can say. Where
// every link was checked and the last one is the one fixed, the links fix every linked event, and
// the difference is among the unlinked ones before them.
func (w *ChainWalk) differs(seq int64, sameLink bool, what string) *ChainBreak {
	from, to := w.covered+1, seq
	if w.ver != nil && sameLink && len(w.unheld) == 0 && w.firstLink > from {
		to = min(to, w.firstLink-1)
	}
	reason := fmt.Sprintf("an event in seq %d-%d differs from what %s: altered, removed, inserted or re-linked since", from, to, what)
	if from >= to {
		from, to = to, 0
		reason = fmt.Sprintf("it differs from what %s: altered, removed, inserted or re-linked since", what)
	}
	return &ChainBreak{Seq: from, To: to, Reason: reason}
}

// Finish is the walk's outcome: what the events walked so far show, with what only their end
// can (a tail cut off, where the chain begins, links left unchecked). It changes nothing, so a
// walk may go on after it (Follower).
func (w *ChainWalk) Finish() ChainReport {
	rep := w.rep
	rep.Notes = slices.Clone(rep.Notes)
	if b := w.unheldBreak(); b != nil && (rep.Break == nil || b.Seq < rep.Break.Seq) {
		rep.Break = b
	}
	if rep.Break != nil {
		return rep
	}
	if w.pruneGap != nil {
		rep.Unchecked = w.pruneGap
		return rep
	}
	end := rep.Events
	genesisGap := w.checkBeginning(&rep)
	if rep.Break != nil {
		return rep
	}
	var beyond int64 // the furthest expectation past the end
	for seq := range w.expects {
		beyond = max(beyond, seq)
	}
	if beyond > end {
		rep.Break = &ChainBreak{Seq: end + 1, To: beyond, Missing: true,
			Reason: fmt.Sprintf("the chain ends at seq %d, but %s covers it up to seq %d: its tail was cut off", end, w.expects[beyond][0].What, beyond)}
		return rep
	}
	for i, x := range w.heads {
		if !w.found[i] {
			rep.Break = &ChainBreak{Seq: end + 1, Reason: "the recorded head " + hex.EncodeToString(x.Link) + " is not in the chain: its tail was cut off (or rewritten)"}
			return rep
		}
	}
	rep.Unchecked = w.unheldGap()
	if rep.Unchecked == nil {
		rep.Unchecked = w.treeGap()
	}
	if rep.Unchecked == nil && w.prunedGap != nil {
		rep.Unchecked = w.prunedGap
	}
	if rep.Unchecked == nil {
		rep.Unchecked = genesisGap
	}
	if w.ver == nil {
		return rep
	}
	v := Verified{ok: true, seq: end, head: rep.Head.Hash, digest: rep.Digest, lastUnlinked: w.beginsAfter(), genesisKnown: w.genesis != nil && (!w.begun || w.sealedBeforePrune()), prune: rep.Prune}
	if w.tree != nil && len(w.tree.pending) == 0 && w.tree.n == end {
		size, root, err := w.tree.head()
		if err != nil {
			rep.Break = &ChainBreak{Seq: end, Reason: err.Error()}
			return rep
		}
		v.treeSize, v.treeRoot = size, root
	}
	switch {
	case rep.Unchecked == nil:
		rep.verified = v
	case rep.Unchecked == genesisGap:
		v.onTrust = true
		rep.trusting = v
	}
	return rep
}

// checkBeginning checks where the chain begins against a genesis that is not sealed under a key
// of the ring (unsealed, or under a key it lacks): before the first link, which a checkpoint or an
// anchor under a key of the ring must cover to prove it. A genesis that disagrees with the trail
// is a break; one nothing proves is returned as a gap.
func (w *ChainWalk) checkBeginning(rep *ChainReport) *ChainGap {
	g := w.genesis
	if g == nil || w.begun {
		return nil
	}
	end := rep.Events
	if g.verdict == genesisSealed {
		if g.lastUnlinked > end {
			rep.Break = &ChainBreak{Seq: end + 1, To: g.lastUnlinked, Missing: true,
				Reason: fmt.Sprintf("the genesis says events up to seq %d were written before the chain, and the trail ends at seq %d: removed", g.lastUnlinked, end)}
		}
		return nil
	}
	// A first link made with no link before it proves nothing here: the service links after
	// whatever head it finds, also one whose link was stripped. A digest fixes where it begins.
	begins := w.beginsAfter()
	proven := w.covered >= end
	if w.firstLink > 0 {
		proven = w.covered >= w.firstLink
	}
	switch {
	case begins != g.lastUnlinked:
		what := fmt.Sprintf("its first link is seq %d", w.firstLink)
		if w.firstLink == 0 {
			what = fmt.Sprintf("it holds no link and %d events", end)
		}
		rep.Break = &ChainBreak{Seq: min(begins, g.lastUnlinked) + 1,
			Reason: fmt.Sprintf("%s, and names seq %d as the last event from before the chain, but %s: altered", g.why, g.lastUnlinked, what)}
	case proven:
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s; a checkpoint or an anchor under a key of the ring fixes where the chain begins (after seq %d)", g.why, begins))
	default:
		return &ChainGap{genesis: true, Reason: g.why + ", and no checkpoint or anchor under a key of the ring fixes where the chain begins: " + g.fix()}
	}
	return nil
}

// fix says what makes a genesis that is not sealed under a key of the ring checkable.
func (g *genesisState) fix() string {
	if g.verdict == genesisUnknownKey {
		return "add that key to BACKOFFICE_MASTER_KEYS"
	}
	return "`serve` seals it when it starts, while no checkpoint exists; beside checkpoints an unsealed genesis means its seal was removed"
}

// beginsAfter is the last event before the chain as the trail shows it: before its first link,
// or all of them when there is none.
func (w *ChainWalk) beginsAfter() int64 {
	switch {
	case w.genesis != nil && w.genesis.verdict == genesisSealed:
		return w.genesis.lastUnlinked
	case w.firstLink > 0:
		return w.firstLink - 1
	}
	return w.rep.Events
}

// unheldBreak is the first link under a key the ring lacks that came after links under keys it
// holds and that nothing covers: keys change forward only, so it was made up.
func (w *ChainWalk) unheldBreak() *ChainBreak {
	for _, r := range w.unheld {
		if r.afterHeld {
			return &ChainBreak{Seq: r.from, ID: r.id, Reason: fmt.Sprintf("its link is made under key %q, which the ring does not hold, after links under keys it holds, and no anchor or checkpoint under a key it holds covers it: altered (keys change forward only, at a rotation; if %q is a key newer than the ring's, verify with a ring that holds it)", r.keyID, r.keyID)}
		}
	}
	return nil
}

// unheldGap is the stretch of links under keys the ring lacks that nothing covers.
func (w *ChainWalk) unheldGap() *ChainGap {
	if len(w.unheld) == 0 {
		return nil
	}
	var ids []string
	for _, r := range w.unheld {
		if q := fmt.Sprintf("%q", r.keyID); !slices.Contains(ids, q) {
			ids = append(ids, q)
		}
	}
	keys := strings.Join(ids, ", ")
	return &ChainGap{From: w.unheld[0].from, To: w.unheld[len(w.unheld)-1].to,
		Reason: fmt.Sprintf("the links are made under key %s, which the ring does not hold, and no anchor or checkpoint under a key it holds covers them: add %s to BACKOFFICE_MASTER_KEYS (and run `backoffice keys rewrap` before removing it again); a key id no ring of yours ever held means the trail was altered", keys, keys)}
}
