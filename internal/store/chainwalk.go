package store

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"backoffice/internal/domain"
)

// ChainExpect is something kept outside the database that the chain must still hold: the link of
// an event recorded by hand (Seq 0: anywhere in the chain), or a signed checkpoint (the link of
// event Seq and the digest of the trail up to it, see ChainDigest).
type ChainExpect struct {
	Seq    int64
	Link   []byte
	Digest []byte
	// What names it in a report ("checkpoint of 2026-11-25T12:00:00Z in FILE").
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
	// the newest event a checkpoint covers (0: none).
	Matched int
	Covered int64
	// LinksUnchecked counts the links not checked for want of a key (a walk without a signer).
	LinksUnchecked int64
	// Break is the first event where the chain does not hold, nil when it is whole.
	Break *ChainBreak
	// Unchecked, when the chain did not break, is what could not be checked (a key the ring
	// lacks, a genesis not sealed yet): neither intact nor broken.
	Unchecked *ChainGap
}

// ChainBreak names the first event at which the chain does not hold, and why.
type ChainBreak struct {
	Seq    int64
	ID     domain.ID
	Reason string
}

func (b *ChainBreak) Error() string {
	if b.ID == "" {
		return fmt.Sprintf("audit chain broken at seq %d: %s", b.Seq, b.Reason)
	}
	return fmt.Sprintf("audit chain broken at seq %d (event %s): %s", b.Seq, b.ID, b.Reason)
}

// ChainGap is a stretch of the chain that could not be checked, and why.
type ChainGap struct {
	From, To int64
	Reason   string
}

func (g *ChainGap) Error() string {
	if g.From == 0 {
		return "cannot check the audit chain: " + g.Reason
	}
	return fmt.Sprintf("cannot check the audit chain from seq %d to %d: %s", g.From, g.To, g.Reason)
}

// ChainWalk checks one event after another, in sequence order: numbered from 1 without gaps,
// unlinked only up to where the genesis says the chain begins, every link the MAC of the one
// before and the event under its recorded key, every anchor's digest that of the trail it names,
// and every expectation met.
type ChainWalk struct {
	sig     ChainSigner // nil: links are not checked (an auditor with an export and no key)
	genesis *Genesis    // nil: not known (an export); unlinked events then only before the first link
	rep     ChainReport
	prev    []byte
	chained bool
	// keep holds the digests at the sequence numbers anchors name.
	keep    map[int64][]byte
	expects map[int64][]ChainExpect
	heads   []ChainExpect
	found   []bool
	missing *ChainGap // links under keys the ring lacks, not yet covered by an anchor
	// checked is set once a link under a key of the ring held: keys change forward only (at a
	// rotation), so a link under a key the ring lacks after it is believed only if an anchor
	// covers it, and is a break otherwise.
	checked   bool
	afterHeld *ChainBreak
}

// NewChainWalk starts a walk. anchored are the sequence numbers the trail's anchors name (the
// digests to keep; an anchor is believed only once its own link holds).
func NewChainWalk(sig ChainSigner, g *Genesis, anchored []int64, expects []ChainExpect) *ChainWalk {
	w := &ChainWalk{sig: sig, genesis: g, keep: map[int64][]byte{}, expects: map[int64][]ChainExpect{}}
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
	if g != nil && sig != nil {
		w.checkGenesis()
	}
	return w
}

// checkGenesis checks where the chain begins before any event is walked.
func (w *ChainWalk) checkGenesis() {
	g := w.genesis
	switch ok, known := g.check(w.sig); {
	case !g.Found:
		w.rep.Break = &ChainBreak{Seq: 1, Reason: "the genesis record (where the chain begins) is missing: removed from audit_chain_genesis"}
	case g.MAC == nil:
		w.rep.Unchecked = &ChainGap{Reason: fmt.Sprintf("the genesis record (the chain begins after seq %d) is not sealed: `serve` seals it when it starts. After the first start of this release an unsealed genesis means its seal was removed", g.LastUnlinked)}
	case !known:
		w.rep.Unchecked = &ChainGap{Reason: fmt.Sprintf("the genesis record is sealed under key %q, which the ring does not hold: add it to BACKOFFICE_MASTER_KEYS", g.KeyID)}
	case !ok:
		w.rep.Break = &ChainBreak{Seq: 1, Reason: fmt.Sprintf("the genesis record (the chain begins after seq %d) does not match its seal: altered", g.LastUnlinked)}
	}
}

// Report is what the walk has found so far.
func (w *ChainWalk) Report() ChainReport { return w.rep }

// Step checks the next event; false once the chain is broken (later events add nothing).
func (w *ChainWalk) Step(e domain.AuditEvent) bool {
	if w.rep.Break != nil {
		return false
	}
	broken := func(format string, args ...any) bool {
		w.rep.Break = &ChainBreak{Seq: e.Seq, ID: e.ID, Reason: fmt.Sprintf(format, args...)}
		return false
	}
	if next := w.rep.Events + 1; e.Seq != next {
		if e.Seq > next {
			w.rep.Break = &ChainBreak{Seq: next, Reason: fmt.Sprintf("missing: removed (the next event is seq %d, %s)", e.Seq, e.ID)}
			return false
		}
		return broken("numbered out of order (after seq %d)", w.rep.Events)
	}
	link, err := hex.DecodeString(e.Hash)
	if err != nil || (e.Hash == "") != (e.ChainKeyID == "") {
		return broken("its link is malformed (a hash needs a key id, and the reverse)")
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
		if !bytes.Equal(x.Digest, digest) || (x.Link != nil && !bytes.Equal(x.Link, link)) {
			return broken("the trail up to here is not the one %s signed: an event up to seq %d was altered, removed, inserted or re-linked since", x.What, e.Seq)
		}
		w.rep.Matched++
		w.rep.Covered = e.Seq
	}
	for i, x := range w.heads {
		if linked && bytes.Equal(x.Link, link) {
			w.found[i] = true
		}
	}
	return true
}

// place checks that e is linked where the chain has begun, and unlinked before.
func (w *ChainWalk) place(e domain.AuditEvent, linked bool, broken func(string, ...any) bool) bool {
	if w.genesis == nil {
		switch {
		case !linked && w.chained:
			return broken("no link after the chain began: inserted, or its link removed")
		case !linked:
			w.rep.Legacy++
		default:
			w.chained = true
		}
		return true
	}
	last := w.genesis.LastUnlinked
	switch {
	case e.Seq <= last && linked:
		return broken("linked, but the genesis says the chain begins after seq %d", last)
	case e.Seq <= last:
		w.rep.Legacy++
	case !linked:
		return broken("no link, but the chain began after seq %d (its genesis): inserted, or its link removed", last)
	}
	return true
}

// checkLink checks e's link under its key, and an anchor's digest once its link holds. A link
// under a key the ring lacks is set aside (missing) until an anchor under a key it holds covers it.
func (w *ChainWalk) checkLink(e domain.AuditEvent, link []byte, broken func(string, ...any) bool) bool {
	if w.sig == nil {
		w.rep.LinksUnchecked++
		return true
	}
	h, err := chainLink(w.sig, w.prev, e)
	if err != nil {
		if w.checked && w.afterHeld == nil {
			w.afterHeld = &ChainBreak{Seq: e.Seq, ID: e.ID, Reason: fmt.Sprintf("its link is made under key %q, which the ring does not hold, after links under keys it holds: altered (keys change forward only, at a rotation, and no anchor covers it)", e.ChainKeyID)}
		}
		if w.missing == nil {
			w.missing = &ChainGap{From: e.Seq}
		}
		w.missing.To = e.Seq
		w.missing.Reason = fmt.Sprintf("the links are made under key %q, which the ring does not hold, and no anchor under a key it holds covers them: add that key to BACKOFFICE_MASTER_KEYS, or run `backoffice keys rewrap` (it anchors them) before removing it", e.ChainKeyID)
		return true
	}
	if !bytes.Equal(h, link) {
		return broken("its link does not match: the event was altered, inserted, or follows an altered one")
	}
	w.checked = true
	if e.Action != ActionAuditAnchor {
		return true
	}
	seq, digest, ok := parseAnchor(e.Detail)
	if !ok {
		return broken("an anchor whose detail names no events and digest")
	}
	kept := w.keep[seq]
	if seq >= e.Seq || kept == nil {
		return broken("an anchor of events 1 to %d, which do not all precede it", seq)
	}
	if !bytes.Equal(kept, digest) {
		return broken("the events 1 to %d are not the ones this anchor fixed: one was altered, removed, inserted or re-linked since", seq)
	}
	if w.missing != nil && w.missing.To <= seq {
		w.missing = nil
	}
	if w.afterHeld != nil && w.afterHeld.Seq <= seq {
		w.afterHeld = nil
	}
	return true
}

// Finish ends the walk: an expectation past the chain's end means its tail was cut off.
func (w *ChainWalk) Finish() ChainReport {
	if w.afterHeld != nil && (w.rep.Break == nil || w.afterHeld.Seq < w.rep.Break.Seq) {
		w.rep.Break = w.afterHeld
	}
	if w.rep.Break != nil {
		return w.rep
	}
	end := w.rep.Events
	var beyond int64 // the furthest expectation past the end
	for seq := range w.expects {
		beyond = max(beyond, seq)
	}
	if beyond > end {
		w.rep.Break = &ChainBreak{Seq: end + 1, Reason: fmt.Sprintf("the chain ends at seq %d, but %s covers it up to seq %d: its tail was cut off", end, w.expects[beyond][0].What, beyond)}
	}
	for i, x := range w.heads {
		if w.rep.Break == nil && !w.found[i] {
			w.rep.Break = &ChainBreak{Seq: end + 1, Reason: "the recorded head " + hex.EncodeToString(x.Link) + " is not in the chain: its tail was cut off (or rewritten)"}
		}
	}
	if w.rep.Unchecked == nil && w.missing != nil {
		w.rep.Unchecked = w.missing
	}
	return w.rep
}
