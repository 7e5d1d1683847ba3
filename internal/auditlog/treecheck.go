package auditlog

import (
	"bytes"
	"context"
	"fmt"

	"backoffice/internal/domain"
	"backoffice/internal/trail"

	"golang.org/x/mod/sumdb/tlog"
)

// treeCheck is a walk's check of the audit tree (a walk of the database's trail; an export has
// none): each event's leaf, made from its row and its stored subject tag, must be its level-0
// stored hash, and every other stored hash its events added must be tlog's hash of the ones below
// it. With a ring that makes subject tags, each tag must also be the one its key makes of the
// event's target. Events are checked a page at a time (flush), after the chain's own checks.
type treeCheck struct {
	// n is the leaves checked, edge the right edge of their tree as computed from them.
	n    int64
	edge edgeHashes
	// tagger remakes the subject tags (nil: the stored ones are taken).
	tagger  subjectTagger
	pending []domain.AuditEvent
	// short is the first event whose leaf the tree lacks where every later row is missing too
	// (0: none): a tree not yet built for it (a database upgraded to the tree, and not yet opened
	// with the ring), which leaves the rest unchecked rather than broken.
	short int64
}

// newTreeCheck starts the tree's check after n leaves whose right edge is edge.
func newTreeCheck(ver ChainVerifier, n int64, edge edgeHashes) *treeCheck {
	c := &treeCheck{n: n, edge: edge}
	if t, ok := ver.(subjectTagger); ok {
		c.tagger = t
	}
	return c
}

// checkTree checks the events walked since the last check against the tree rows they added, read
// in q: the first row that differs is the walk's break, at the event that wrote it.
func (w *ChainWalk) checkTree(ctx context.Context, q runner) error {
	c := w.tree
	if c == nil || len(c.pending) == 0 {
		return nil
	}
	events := c.pending
	c.pending = c.pending[:0]
	if w.rep.Break != nil || c.short != 0 {
		return nil
	}
	first := tlog.StoredHashCount(c.n)
	stored, tags, err := readTreeRange(ctx, q, first, tlog.StoredHashCount(c.n+int64(len(events))))
	if err != nil {
		return err
	}
	leafTags := make([][]byte, len(events))
	for i, e := range events {
		x := tlog.StoredHashIndex(0, c.n+int64(i))
		tag, ok := tags[x]
		if _, there := stored[x]; !there || !ok {
			ends, err := treeEndsBefore(ctx, q, x)
			if err != nil {
				return err
			}
			if !ends {
				w.rep.Break = &ChainBreak{Seq: e.Seq, ID: e.ID, Reason: "its leaf is not in the audit tree: the tree's rows were removed, or the event inserted outside the writer"}
				return nil
			}
			c.short, events, leafTags = e.Seq, events[:i], leafTags[:i]
			break
		}
		if b := w.checkTag(e, tag); b != nil {
			w.rep.Break = b
			return nil
		}
		leafTags[i] = tag
	}
	rows, edge, err := growTree(c.n, c.edge, leafTags, events)
	if err != nil {
		return err
	}
	for i, want := range rows.hashes {
		x := rows.first + int64(i)
		if _, leaf := rows.tags[x]; !leaf && tags[x] != nil {
			leafOf, _ := leavesOf(x + 1)
			e := events[leafOf-1-c.n]
			w.rep.Break = &ChainBreak{Seq: e.Seq, ID: e.ID, Reason: fmt.Sprintf("a hash of the audit tree it added (stored hash %d) is no leaf's and has a subject tag: the tree row was altered", x)}
			return nil
		}
		if got, ok := stored[x]; !ok || got != want {
			leaf, _ := leavesOf(x + 1) // the rows of leaf L are StoredHashCount(L) to StoredHashCount(L+1)-1
			e := events[leaf-1-c.n]
			why := "its leaf in the audit tree (stored hash %d) is not the event's: the tree row or its subject tag was altered"
			if tlog.StoredHashIndex(0, leaf-1) != x {
				why = "a hash of the audit tree it added (stored hash %d) is not the hash of the ones below it: the tree row was altered"
			}
			if !ok {
				why = "a hash of the audit tree it added (stored hash %d) is missing: the tree row was removed"
			}
			w.rep.Break = &ChainBreak{Seq: e.Seq, ID: e.ID, Reason: fmt.Sprintf(why, x)}
			return nil
		}
	}
	c.n += int64(len(events))
	c.edge = edge
	return nil
}

// treeEndsBefore tells whether the tree holds no row from x on.
func treeEndsBefore(ctx context.Context, q runner, x int64) (bool, error) {
	count, err := storedHashes(ctx, q)
	if err != nil {
		return false, err
	}
	return count <= x, nil
}

// treeGap is what a walk could not check of the tree, nil when it checked all it walked.
func (w *ChainWalk) treeGap() *ChainGap {
	if w.tree == nil || w.tree.short == 0 {
		return nil
	}
	return &ChainGap{From: w.tree.short, To: w.rep.Events, tree: true,
		Reason: "the audit tree does not hold these events yet: it is built for events written before it when the database is opened with the master key ring (serve, or any command given the ring); run one, then verify again"}
}

// checkTag checks an event's stored subject tag: none for an event without a key, 32 bytes
// otherwise, and, where the walk can make tags, the one its key makes of its target.
func (w *ChainWalk) checkTag(e domain.AuditEvent, tag []byte) *ChainBreak {
	broken := func(why string) *ChainBreak { return &ChainBreak{Seq: e.Seq, ID: e.ID, Reason: why} }
	switch {
	case e.ChainKeyID == "" && tag != nil:
		return broken("its leaf in the audit tree has a subject tag, and the event no key: the tree row was altered")
	case e.ChainKeyID == "":
		return nil
	case len(tag) != trail.TagSize:
		return broken(fmt.Sprintf("its subject tag in the audit tree is %d bytes, not %d: the tree row was altered", len(tag), trail.TagSize))
	case w.tree.tagger == nil:
		return nil
	}
	want, err := w.tree.tagger.SubjectTag(e.ChainKeyID, e.TargetID)
	if err != nil {
		return nil // a key the ring lacks: the link's check says so
	}
	if !bytes.Equal(want, tag) {
		return broken("its subject tag in the audit tree is not its target's under its key: the tree row was altered")
	}
	return nil
}

// finishTree checks, after the whole trail was walked, that the tree holds no leaf past it (a
// tail cut from the events and not from the tree).
func (w *ChainWalk) finishTree(ctx context.Context, q runner) error {
	if w.tree == nil || w.rep.Break != nil || w.tree.short != 0 {
		return nil
	}
	count, err := storedHashes(ctx, q)
	if err != nil {
		return err
	}
	if count > tlog.StoredHashCount(w.tree.n) {
		leaves, _ := leavesOf(count)
		w.rep.Break = &ChainBreak{Seq: w.rep.Events + 1, To: max(leaves, w.rep.Events+1), Missing: true,
			Reason: fmt.Sprintf("the audit tree holds leaves past the trail's end at seq %d: its tail was cut off", w.rep.Events)}
	}
	return nil
}

// readTreeRange reads the stored hashes from first to end-1, and the subject tags of the level-0
// rows among them, in one query (a row's absence is the caller's to judge).
func readTreeRange(ctx context.Context, q runner, first, end int64) (map[int64]tlog.Hash, map[int64][]byte, error) {
	r, err := q.Query(ctx, `SELECT id, hash, subject_tag FROM audit_tree WHERE id >= ? AND id < ?`, first, end)
	if err != nil {
		return nil, nil, fmt.Errorf("store: audit tree: %w", err)
	}
	defer r.Close()
	hashes, tags := make(map[int64]tlog.Hash, end-first), map[int64][]byte{}
	for r.Next() {
		var id int64
		var h, tag []byte
		if err := r.Scan(&id, &h, &tag); err != nil {
			return nil, nil, fmt.Errorf("store: audit tree: %w", err)
		}
		var hash tlog.Hash
		if len(h) == tlog.HashSize {
			hash = tlog.Hash(h)
		} else {
			hash[0] = ^byte(0) // a hash of another length is no hash: it differs from every one
		}
		hashes[id], tags[id] = hash, tag
	}
	if err := r.Err(); err != nil {
		return nil, nil, fmt.Errorf("store: audit tree: %w", err)
	}
	return hashes, tags, nil
}

// Tree is the audit tree of the trail as verified: its size (Seq) and its root, tlog.TreeHash
// over stored hashes the walk checked against the events. Zero for a walk that checked no tree
// (an export's).
func (v Verified) Tree() (size int64, root tlog.Hash) { return v.treeSize, v.treeRoot }

// treeHead is the tree a walk checked: its size and root.
func (c *treeCheck) head() (int64, tlog.Hash, error) {
	root, err := tlog.TreeHash(c.n, mapReader(c.edge))
	return c.n, root, err
}
