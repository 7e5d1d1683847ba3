package auditlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
	"backoffice/internal/trail"

	"golang.org/x/mod/sumdb/tlog"
)

// The audit trail's Merkle tree (RFC 6962, as golang.org/x/mod/sumdb/tlog computes it): leaf i is
// event seq i+1 (trail.Leaf: its subject tag and its event hash), and audit_tree holds every
// stored hash of tlog's layout by its stored-hash index, the level-0 row of a leaf also holding the
// leaf's subject tag. Stored hashes are append-only and numbered without gaps: appending leaves n
// to n+k-1 adds the rows tlog.StoredHashCount(n) to tlog.StoredHashCount(n+k)-1, so a tree of n
// leaves is exactly the rows 0 to StoredHashCount(n)-1. The writer computes a group's rows from
// the tree's right edge (treeEdge) and writes them in the transaction that appends its events.

// ErrTree means the audit tree is not what the trail's events make of it: a stored hash the
// writer needs is missing or altered, or the tree lacks events (a database upgraded and not yet
// opened with the master key ring, see BuildAuditTree). No event is appended onto it: callers are
// answered 503.
var ErrTree = errors.New("store: the audit tree does not match the trail")

// treeError says what of the tree is wrong.
type treeError struct{ what string }

func (e *treeError) Error() string {
	return "store: the audit tree does not match the trail: " + e.what + " (run backoffice audit verify)"
}

func (e *treeError) Is(target error) bool { return target == ErrTree || target == errUnavailable }

// treeEdge is the stored-hash indexes of the tree of n leaves that appending to it reads, and its
// root is made of (tlog.TreeHash): the root of each maximal complete subtree, one for each bit set
// in n, the largest first.
func treeEdge(n int64) []int64 {
	var edge []int64
	for level := bits.Len64(uint64(n)) - 1; level >= 0; level-- {
		if n&(1<<level) != 0 {
			edge = append(edge, tlog.StoredHashIndex(level, n>>level-1))
		}
	}
	return edge
}

// treeRows are the stored hashes a group adds, from index first on, and the subject tags of its
// leaves by their stored-hash index (nil for a leaf without a key).
type treeRows struct {
	first  int64
	hashes []tlog.Hash
	tags   map[int64][]byte
}

// edgeHashes is a tree's right edge (treeEdge) by stored-hash index.
type edgeHashes map[int64]tlog.Hash

// mapReader is a tlog.HashReader over hashes held in memory: an index it lacks is an error.
type mapReader map[int64]tlog.Hash

func (m mapReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		h, ok := m[x]
		if !ok {
			return nil, &treeError{what: fmt.Sprintf("stored hash %d is missing", x)}
		}
		out[i] = h
	}
	return out, nil
}

// growTree appends the leaves (their subject tags and events) to the tree of n leaves whose right
// edge is edge: the rows they add, and the right edge of the tree after them.
func growTree(n int64, edge edgeHashes, tags [][]byte, events []domain.AuditEvent) (treeRows, edgeHashes, error) {
	known := mapReader{}
	for x, h := range edge {
		known[x] = h
	}
	rows := treeRows{first: tlog.StoredHashCount(n), tags: make(map[int64][]byte, len(events))}
	for i, e := range events {
		leaf := n + int64(i)
		hs, err := tlog.StoredHashesForRecordHash(leaf, trail.LeafHash(trail.Leaf(tags[i], e)), known)
		if err != nil {
			return treeRows{}, nil, err
		}
		at := rows.first + int64(len(rows.hashes))
		for j, h := range hs {
			known[at+int64(j)] = h
		}
		rows.tags[at] = tags[i]
		rows.hashes = append(rows.hashes, hs...)
	}
	next := edgeHashes{}
	for _, x := range treeEdge(n + int64(len(events))) {
		h, ok := known[x]
		if !ok {
			return treeRows{}, nil, &treeError{what: fmt.Sprintf("stored hash %d is missing", x)}
		}
		next[x] = h
	}
	return rows, next, nil
}

// subjectTagger makes the leaves' subject tags (*secrets.Ring is one).
type subjectTagger interface {
	SubjectTag(keyID, subject string) ([]byte, error)
}

// subjectTags are the leaves' subject tags of events (linked, with their key ids): nil for an
// event without a key.
func subjectTags(sig subjectTagger, events []domain.AuditEvent) ([][]byte, error) {
	tags := make([][]byte, len(events))
	for i, e := range events {
		if e.ChainKeyID == "" || e.Hash == "" {
			continue
		}
		t, err := sig.SubjectTag(e.ChainKeyID, e.TargetID)
		if err != nil {
			return nil, fmt.Errorf("store: audit event seq %d: subject tag: %w", e.Seq, err)
		}
		tags[i] = t
	}
	return tags, nil
}

// readEdge reads the right edge of the tree of n leaves in one query, failing with ErrTree
// when a row of it is missing, or when the tree holds more than n leaves (events removed from
// the trail's tail, or a tree written past it).
func readEdge(ctx context.Context, q runner, n int64) (edgeHashes, error) {
	idx := treeEdge(n)
	after := tlog.StoredHashCount(n)
	got, err := readTreeRows(ctx, q, append(idx, after))
	if err != nil {
		return nil, err
	}
	if _, ok := got[after]; ok {
		return nil, &treeError{what: fmt.Sprintf("it holds more leaves than the trail's %d events", n)}
	}
	edge := make(edgeHashes, len(idx))
	for _, x := range idx {
		h, ok := got[x]
		if !ok {
			return nil, &treeError{what: fmt.Sprintf("stored hash %d is missing", x)}
		}
		edge[x] = h
	}
	return edge, nil
}

// readTreeEdge reads the right edge of the tree of n leaves, failing with ErrTree when a row
// of it is missing (whatever the tree holds after it).
func readTreeEdge(ctx context.Context, q runner, n int64) (edgeHashes, error) {
	idx := treeEdge(n)
	hs, err := readTreeHashes(ctx, q, idx)
	if err != nil {
		return nil, err
	}
	edge := make(edgeHashes, len(idx))
	for i, x := range idx {
		edge[x] = hs[i]
	}
	return edge, nil
}

// treeReadChunk bounds the indexes one query reads (SQLite's variables, PostgreSQL's plan).
const treeReadChunk = 256

// readTreeHashes reads the stored hashes at indexes, in their order; an index not stored fails
// with ErrTree.
func readTreeHashes(ctx context.Context, q runner, indexes []int64) ([]tlog.Hash, error) {
	got, err := readTreeRows(ctx, q, indexes)
	if err != nil {
		return nil, err
	}
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		h, ok := got[x]
		if !ok {
			return nil, &treeError{what: fmt.Sprintf("stored hash %d is missing", x)}
		}
		out[i] = h
	}
	return out, nil
}

// readTreeRows reads the stored hashes at indexes that are there, a query per treeReadChunk of
// them.
func readTreeRows(ctx context.Context, q runner, indexes []int64) (map[int64]tlog.Hash, error) {
	got := make(map[int64]tlog.Hash, len(indexes))
	for start := 0; start < len(indexes); start += treeReadChunk {
		part := indexes[start:min(start+treeReadChunk, len(indexes))]
		args := make([]any, len(part))
		for i, x := range part {
			args[i] = x
		}
		if err := readTreeChunk(ctx, q, args, got); err != nil {
			return nil, err
		}
	}
	return got, nil
}

// readTreeChunk reads the stored hashes at the indexes args into got.
func readTreeChunk(ctx context.Context, q runner, args []any, got map[int64]tlog.Hash) error {
	r, err := q.Query(ctx, `SELECT id, hash FROM audit_tree WHERE id IN (`+placeholders(len(args))+`)`, args...)
	if err != nil {
		return fmt.Errorf("store: audit tree: %w", err)
	}
	defer r.Close()
	for r.Next() {
		var id int64
		var h []byte
		if err := r.Scan(&id, &h); err != nil {
			return fmt.Errorf("store: audit tree: %w", err)
		}
		if len(h) != tlog.HashSize {
			return &treeError{what: fmt.Sprintf("stored hash %d is %d bytes, not %d", id, len(h), tlog.HashSize)}
		}
		got[id] = tlog.Hash(h)
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("store: audit tree: %w", err)
	}
	return nil
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// treeRowArgs are rows' values, three a row (id, hash, subject_tag).
func (rows treeRows) args() []any {
	args := make([]any, 0, 3*len(rows.hashes))
	for i, h := range rows.hashes {
		id := rows.first + int64(i)
		var tag []byte
		if t, ok := rows.tags[id]; ok && t != nil {
			tag = t
		}
		args = append(args, id, h[:], tag)
	}
	return args
}

// arrays are rows as PostgreSQL arrays: ids, hashes, tags (NULL where none).
func (rows treeRows) arrays() (ids []int64, hashes [][]byte, tags [][]byte) {
	ids, hashes, tags = make([]int64, len(rows.hashes)), make([][]byte, len(rows.hashes)), make([][]byte, len(rows.hashes))
	for i, h := range rows.hashes {
		id := rows.first + int64(i)
		ids[i], hashes[i], tags[i] = id, h[:], rows.tags[id]
	}
	return ids, hashes, tags
}

// maxTreeInsert is the most rows one of SQLite's tree INSERTs carries.
const maxTreeInsert = 512

const treeInsertHead = `INSERT INTO audit_tree (id, hash, subject_tag) VALUES `

// treeInsertRows[k] inserts 1<<k tree rows.
var treeInsertRows = func() []string {
	var texts []string
	for n := 1; n <= maxTreeInsert; n *= 2 {
		texts = append(texts, treeInsertHead+sqltx.ValueRows(3, n))
	}
	return texts
}()

// treeInsertArrays inserts any number of tree rows in one statement (PostgreSQL).
const treeInsertArrays = `INSERT INTO audit_tree (id, hash, subject_tag) SELECT * FROM unnest(?::bigint[], ?::bytea[], ?::bytea[])`

// insertTree writes rows in q.
func insertTree(ctx context.Context, q *sqltx.Tx, arrays bool, typed func([]any) []any, rows treeRows) error {
	if len(rows.hashes) == 0 {
		return nil
	}
	if arrays {
		ids, hashes, tags := rows.arrays()
		st, err := q.Cached(ctx, treeInsertArrays)
		if err != nil {
			return fmt.Errorf("store: audit tree: %w", err)
		}
		defer st.Close()
		if _, err := st.ExecContext(ctx, typed([]any{ids, hashes, tags})...); err != nil {
			return fmt.Errorf("store: audit tree: %w", q.Classify(err))
		}
		return nil
	}
	args := rows.args()
	for len(args) > 0 {
		n := 1 << (bits.Len(uint(min(len(args)/3, maxTreeInsert))) - 1)
		st, err := q.Cached(ctx, treeInsertRows[bits.Len(uint(n))-1])
		if err != nil {
			return fmt.Errorf("store: audit tree: %w", err)
		}
		_, err = st.ExecContext(ctx, args[:3*n]...)
		st.Close()
		if err != nil {
			return fmt.Errorf("store: audit tree: %w", q.Classify(err))
		}
		args = args[3*n:]
	}
	return nil
}

// maxEdge bounds a right edge's size: one row for each bit set in the tree's size.
const maxEdge = 64

// treeReadBacks[k] reads the tree rows from first on (the group's, and any past them, which the
// group did not write: a row far past the tree's end fails the group instead of passing unseen),
// then up to 1<<k rows of the right edge (the last arguments; -1 where unused), in one cached
// statement: sized to the edge, not to
// the largest edge, a read-back binds and looks up a few ids instead of maxEdge. Two searches of
// the table's key, one after the other, in no order asked for: joined by OR and ordered, SQLite
// gathers the rows in a temporary tree and sorts them (BenchmarkReadBackTree).
var treeReadBacks = func() []string {
	var texts []string
	for n := 1; n <= maxEdge; n *= 2 {
		texts = append(texts, `SELECT id, hash, subject_tag FROM audit_tree WHERE id >= ? `+
			`UNION ALL SELECT id, hash, subject_tag FROM audit_tree WHERE id IN (`+placeholders(n)+`)`)
	}
	return texts
}()

// treeReadBack is the statement of treeReadBacks for an edge of n rows, and how many it reads.
func treeReadBack(n int) (string, int) {
	k := bits.Len(uint(max(n, 1) - 1))
	return treeReadBacks[k], 1 << k
}

// readBackTree reads, in q, the rows a group wrote and the right edge it computed them from, and
// checks they are exactly those: ErrNotLanded for a row of the group that is not as written,
// ErrTree for an edge row that is missing or altered (the group grew from a tree that is
// not the database's).
func readBackTree(ctx context.Context, q *sqltx.Tx, rows treeRows, edge edgeHashes) error {
	if len(rows.hashes) == 0 {
		return nil
	}
	last := rows.first + int64(len(rows.hashes)) - 1
	text, size := treeReadBack(len(edge))
	args := make([]any, 1, 1+size)
	args[0] = rows.first
	for x := range edge {
		args = append(args, x)
	}
	for len(args) < 1+size {
		args = append(args, int64(-1))
	}
	st, err := q.Cached(ctx, text)
	if err != nil {
		return fmt.Errorf("store: audit tree: read back: %w", err)
	}
	defer st.Close()
	rs, err := st.QueryContext(ctx, args...)
	if err != nil {
		return fmt.Errorf("store: audit tree: read back: %w", q.Classify(err))
	}
	r := q.ClassifiedRows(rs)
	defer r.Close()
	// The rows come in no order asked for: each is placed by its id, and each place taken once.
	seen, edgeSeen := make([]bool, len(rows.hashes)), make(map[int64]bool, len(edge))
	var v [3]any
	for r.Next() {
		// Read as the driver gives them: conversion by reflection cost more than the rest.
		if err := r.Scan(&v[0], &v[1], &v[2]); err != nil {
			return fmt.Errorf("store: audit tree: read back: %w", err)
		}
		id, isID := v[0].(int64)
		h, _ := v[1].([]byte)
		tag, _ := v[2].([]byte)
		if !isID {
			return &notLandedError{what: fmt.Sprintf("audit tree row %v: not an id", v[0])}
		}
		if e, ok := edge[id]; ok && id < rows.first && !edgeSeen[id] {
			if string(h) != string(e[:]) {
				return &treeError{what: fmt.Sprintf("stored hash %d is not the one the tree was grown from", id)}
			}
			edgeSeen[id] = true
			continue
		}
		if id < rows.first || id > last || seen[id-rows.first] {
			return &notLandedError{what: fmt.Sprintf("audit tree row %v: one this group did not write", v[0])}
		}
		w := rows.hashes[id-rows.first]
		if string(h) != string(w[:]) || (v[2] != nil && tag == nil) || string(tag) != string(rows.tags[id]) {
			return &notLandedError{what: fmt.Sprintf("audit tree row %d: not as written", id)}
		}
		seen[id-rows.first] = true
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("store: audit tree: read back: %w", err)
	}
	if len(edgeSeen) != len(edge) {
		return &treeError{what: fmt.Sprintf("%d of the %d stored hashes the tree was grown from are missing", len(edge)-len(edgeSeen), len(edge))}
	}
	if i := slices.Index(seen, false); i >= 0 {
		return &notLandedError{what: fmt.Sprintf("audit tree row %d: missing", rows.first+int64(i))}
	}
	return nil
}

// leavesOf is the number of leaves of a tree of count stored hashes, false when no tree has that
// many.
func leavesOf(count int64) (int64, bool) {
	lo, hi := int64(0), count
	for lo < hi {
		mid := lo + (hi-lo)/2
		if tlog.StoredHashCount(mid) < count {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, tlog.StoredHashCount(lo) == count
}

// storedHashes reads how many stored hashes the tree holds, by its newest row: ids are tlog's
// stored-hash indexes, from 0 without a gap.
func storedHashes(ctx context.Context, q runner) (int64, error) {
	var count int64
	if err := q.QueryRow(ctx, `SELECT COALESCE(MAX(id) + 1, 0) FROM audit_tree`).Scan(&count); err != nil {
		return 0, fmt.Errorf("store: audit tree size: %w", err)
	}
	return count, nil
}

// treeSize reads the number of leaves of the stored tree.
func treeSize(ctx context.Context, q runner) (int64, error) {
	count, err := storedHashes(ctx, q)
	if err != nil {
		return 0, err
	}
	n, ok := leavesOf(count)
	if !ok {
		return 0, &treeError{what: fmt.Sprintf("it ends at stored hash %d, which no tree ends at", count-1)}
	}
	return n, nil
}

// AuditTreeSize is the number of leaves of the audit tree: the events it holds.
func (s *Log) AuditTreeSize(ctx context.Context) (int64, error) {
	return treeSize(ctx, s.db)
}

// ReadAuditHashes reads the audit tree's stored hashes at indexes (tlog's stored-hash indexes), in
// their order: tlog.HashReader's ReadHashes. An index not stored is an error.
func (s *Log) ReadAuditHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error) {
	return readTreeHashes(ctx, s.db, indexes)
}

// AuditHashReader is ReadAuditHashes as a tlog.HashReader, for tlog's proofs and tiles.
func (s *Log) AuditHashReader(ctx context.Context) tlog.HashReader {
	return tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		return s.ReadAuditHashes(ctx, indexes)
	})
}

// AuditLeaves reads the leaves (trail.Leaf) of indexes start to end-1, from the events' rows and
// their subject tags, in one snapshot. A leaf the tree does not hold is an error.
func (s *Log) AuditLeaves(ctx context.Context, start, end int64) ([][]byte, error) {
	if start < 0 || end < start {
		return nil, fmt.Errorf("store: audit leaves %d-%d: not a range", start, end)
	}
	var leaves [][]byte
	err := s.db.Snapshot(ctx, func(q *sqltx.Tx) error {
		var err error
		leaves, err = readLeaves(ctx, q, start, end)
		return err
	})
	return leaves, err
}

// readLeaves reads the leaves start to end-1 in q.
func readLeaves(ctx context.Context, q runner, start, end int64) ([][]byte, error) {
	if start == end {
		return nil, nil
	}
	tags, err := readTags(ctx, q, start, end)
	if err != nil {
		return nil, err
	}
	r, err := q.Query(ctx, auditSelect+` WHERE seq >= ? AND seq <= ? ORDER BY seq`, start+1, end)
	if err != nil {
		return nil, fmt.Errorf("store: audit leaves: %w", err)
	}
	defer r.Close()
	leaves := make([][]byte, 0, end-start)
	for r.Next() {
		e, err := scanAuditEvent(r)
		if err != nil {
			return nil, fmt.Errorf("store: audit leaves: %w", err)
		}
		i := trail.Index(e.Seq)
		if i != start+int64(len(leaves)) {
			return nil, fmt.Errorf("store: audit leaves: leaf %d: %w", start+int64(len(leaves)), domain.ErrNotFound)
		}
		leaves = append(leaves, trail.Leaf(tags[i-start], e))
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("store: audit leaves: %w", err)
	}
	if int64(len(leaves)) != end-start {
		return nil, fmt.Errorf("store: audit leaves: leaf %d: %w", start+int64(len(leaves)), domain.ErrNotFound)
	}
	return leaves, nil
}

// readTags reads the subject tags of leaves start to end-1 from their level-0 rows (nil for a
// leaf without a key); a leaf the tree does not hold is domain.ErrNotFound.
func readTags(ctx context.Context, q runner, start, end int64) ([][]byte, error) {
	first, last := tlog.StoredHashIndex(0, start), tlog.StoredHashIndex(0, end-1)
	r, err := q.Query(ctx, `SELECT id, subject_tag FROM audit_tree WHERE id >= ? AND id <= ?`, first, last)
	if err != nil {
		return nil, fmt.Errorf("store: audit tree tags: %w", err)
	}
	defer r.Close()
	byID := make(map[int64][]byte, 2*(end-start))
	for r.Next() {
		var id int64
		var tag []byte
		if err := r.Scan(&id, &tag); err != nil {
			return nil, fmt.Errorf("store: audit tree tags: %w", err)
		}
		byID[id] = tag
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("store: audit tree tags: %w", err)
	}
	tags := make([][]byte, end-start)
	for i := start; i < end; i++ {
		tag, ok := byID[tlog.StoredHashIndex(0, i)]
		if !ok {
			return nil, fmt.Errorf("store: audit leaf %d: %w", i, domain.ErrNotFound)
		}
		if tag != nil && len(tag) != trail.TagSize {
			return nil, &treeError{what: fmt.Sprintf("leaf %d's subject tag is %d bytes, not %d", i, len(tag), trail.TagSize)}
		}
		tags[i-start] = tag
	}
	return tags, nil
}

// AuditEventAt reads the event at leaf index (seq index+1), or domain.ErrNotFound.
func (s *Log) AuditEventAt(ctx context.Context, index int64) (domain.AuditEvent, error) {
	e, err := scanAuditEvent(s.db.QueryRow(ctx, auditSelect+` WHERE seq = ?`, index+1))
	if errors.Is(err, sql.ErrNoRows) {
		return domain.AuditEvent{}, domain.ErrNotFound
	}
	if err != nil {
		return domain.AuditEvent{}, fmt.Errorf("store: audit event at %d: %w", index, err)
	}
	return e, nil
}

// AuditEventIndex reads the event id and its leaf index, or domain.ErrNotFound (also for an event
// without a seq, which is no leaf).
func (s *Log) AuditEventIndex(ctx context.Context, id domain.ID) (domain.AuditEvent, int64, error) {
	e, err := scanAuditEvent(s.db.QueryRow(ctx, auditSelect+` WHERE id = ? AND seq IS NOT NULL`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return domain.AuditEvent{}, 0, domain.ErrNotFound
	}
	if err != nil {
		return domain.AuditEvent{}, 0, fmt.Errorf("store: audit event %s: %w", id, err)
	}
	return e, trail.Index(e.Seq), nil
}

// functionArgs are rows and the edge they were computed from as audit_chain_append_tree's last
// arguments: the rows' ids, hashes and tags, the edge's ids and hashes.
func (rows treeRows) functionArgs(edge edgeHashes) []any {
	ids, hashes, tags := rows.arrays()
	edgeIDs, edgeHashes := make([]int64, 0, len(edge)), make([][]byte, 0, len(edge))
	for x, h := range edge {
		edgeIDs, edgeHashes = append(edgeIDs, x), append(edgeHashes, h[:])
	}
	return []any{ids, hashes, tags, edgeIDs, edgeHashes}
}

// edgeMissing tells audit_chain_append_tree's refusal of an edge that is not as the group was
// computed from (ZC003): a tree row deleted or altered.
func edgeMissing(err error) bool {
	var pe interface{ SQLState() string }
	return errors.As(err, &pe) && pe.SQLState() == "ZC003"
}

// treeBuildBatch is how many events one transaction of BuildAuditTree adds to the tree.
const treeBuildBatch = 4096

// BuildAuditTree adds to the audit tree the events it lacks: those written before the tree
// existed (a database upgraded to it), or imported. It runs when a store is opened with the
// master key ring (the subject tags are made under it), before anything is appended: the writer
// refuses to append onto a tree that lacks events. Each batch of treeBuildBatch events is one
// transaction that takes the chain's turn, reads the tree's size and right edge in it, and writes
// and reads back the rows the batch adds, so a build killed midway leaves a smaller whole tree,
// which the next one continues, and builds by several processes at once take turns. It costs O(n)
// in the events the tree lacks (a read of each and about two rows written for each), and one
// query when it lacks none. It returns how many events it added.
func (s *Log) BuildAuditTree(ctx context.Context) (int64, error) {
	if s.chainSigner() == nil {
		return 0, ErrNoChainSigner
	}
	// Its transactions run the writer's statements: prepared first, on the pool, to be kept.
	if err := s.prepareAuditOnce(ctx); err != nil {
		return 0, fmt.Errorf("store: build the audit tree: %w", err)
	}
	var added int64
	for {
		var n int64
		chain := s.chain()
		err := s.db.Tx(ctx, func(q *sqltx.Tx) error {
			var err error
			n, err = chain.buildTreeBatch(ctx, q)
			return err
		})
		if err != nil {
			return added, fmt.Errorf("store: build the audit tree: %w", err)
		}
		if n == 0 {
			return added, nil
		}
		added += n
	}
}

// buildTreeBatch adds the next treeBuildBatch events the tree lacks, in q: how many it added.
func (c auditChain) buildTreeBatch(ctx context.Context, q *sqltx.Tx) (int64, error) {
	head, _, err := c.lockChainHead(ctx, q)
	if err != nil {
		return 0, err
	}
	size, err := treeSize(ctx, q)
	if err != nil {
		return 0, err
	}
	if size == head {
		return 0, nil
	}
	if size > head {
		return 0, &treeError{what: fmt.Sprintf("it holds %d leaves, and the trail %d events", size, head)}
	}
	edge, err := readEdge(ctx, q, size)
	if err != nil {
		return 0, err
	}
	end := min(head, size+treeBuildBatch)
	r, err := q.Query(ctx, auditSelect+` WHERE seq > ? AND seq <= ? ORDER BY seq`, size, end)
	if err != nil {
		return 0, err
	}
	var events []domain.AuditEvent
	for r.Next() {
		e, err := scanAuditEvent(r)
		if err != nil {
			r.Close()
			return 0, err
		}
		if e.Seq != size+int64(len(events))+1 {
			r.Close()
			return 0, &treeError{what: fmt.Sprintf("seq %d is missing from the trail", size+int64(len(events))+1)}
		}
		events = append(events, e)
	}
	err = r.Err()
	r.Close()
	if err != nil {
		return 0, err
	}
	if int64(len(events)) != end-size {
		return 0, &treeError{what: fmt.Sprintf("seq %d is missing from the trail", size+int64(len(events))+1)}
	}
	tags, err := subjectTags(c.signer, events)
	if err != nil {
		return 0, fmt.Errorf("%w: the audit tree of the events written before it is built once with the master keys they were linked under; if `keys rewrap` retired that key, put it back in the ring (BACKOFFICE_MASTER_KEYS) for one start, then remove it again (see docs/compliance.md, the tree)", err)
	}
	rows, _, err := growTree(size, edge, tags, events)
	if err != nil {
		return 0, err
	}
	if err := insertTree(ctx, q, c.arrays, c.typed, rows); err != nil {
		return 0, err
	}
	return int64(len(events)), readBackTree(ctx, q, rows, edge)
}

// The store is the audit log its readers read.
var _ trail.Log = (*Log)(nil)
