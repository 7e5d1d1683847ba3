package auditlog

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"sync/atomic"

	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
	"backoffice/internal/trail"
)

// ChainSigner makes the audit chain's links: HMAC-SHA-256 under a key derived from the master
// key keyID (*secrets.Ring is one). New links are made under ActiveKeyID; any key it holds checks
// old ones.
type ChainSigner interface {
	ActiveKeyID() string
	ChainMAC(keyID string, message []byte) ([]byte, error)
	// The keyed tag of subject under the key keyID (the audit tree's leaves hold their event's
	// target's, see trail.Leaf).
	subjectTagger
}

// ErrNoChainSigner means an audit event was to be written by a store given no ChainSigner: an
// event without its link would break the chain, so none is written.
var ErrNoChainSigner = errors.New("store: audit events are chained under the master key ring, and this store was given none (set BACKOFFICE_MASTER_KEY or BACKOFFICE_MASTER_KEYS)")

// SetChainSigner gives the store the signer of the audit chain, before it writes audit events
// (serve, and the commands that write events, do so when they open it). It is safe beside appends:
// each takes the signer once (chainSigner), and keeps it whole.
func (s *Log) SetChainSigner(sig ChainSigner) { s.signer.Store(&sig) }

// chainSigner is the signer SetChainSigner gave last; nil before any.
func (s *Log) chainSigner() ChainSigner {
	if p := s.signer.Load(); p != nil {
		return *p
	}
	return nil
}

const (
	// chainLockedHead makes appenders take turns where the engine lets many writers in
	// (PostgreSQL): it locks the chain's lock row, so that a second appender waits until the
	// first commits, and then reads the head, in one round trip (migration 0007's function).
	chainLockedHead = `SELECT seq, hash FROM audit_chain_head()`
	// chainHead is the newest event: the last row along seq, one index step. A single-writer
	// engine (SQLite) reads it alone: its transactions take the write lock when they begin.
	chainHead = `SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1`
)

// chainMessage is what an event's link authenticates: the previous link and every stored field
// of the event, each length-prefixed (numbers as fixed 8 bytes), after a version label, so that no
// two different events or chains encode alike. The message format is documented in
// docs/compliance.md for verifiers outside this code.
func chainMessage(prev []byte, e domain.AuditEvent) []byte {
	return trail.AppendEvent(make([]byte, 0, 256+len(e.Detail)), "backoffice audit event v1", prev, e)
}

// chainMAC is what computes links: a ChainSigner, or a ChainVerifier.
type chainMAC interface {
	ChainMAC(keyID string, message []byte) ([]byte, error)
}

// chainLink computes e's link after prev under e.ChainKeyID.
func chainLink(sig chainMAC, prev []byte, e domain.AuditEvent) ([]byte, error) {
	return sig.ChainMAC(e.ChainKeyID, chainMessage(prev, e))
}

// auditChain is what appending to the chain needs of the store, taken before a transaction
// begins: a transaction's body holds it, so it holds data and no way to the pool (see DB.Tx).
type auditChain struct {
	signer ChainSigner
	// arrays: the engine takes a column of values as an array (PostgreSQL, insertAuditArrays).
	arrays bool
	// typed is the engine's TypedArgs, for the statements whose arguments are arrays.
	typed func([]any) []any
	// lockHead: the engine lets many writers in (PostgreSQL), so appenders take turns on the
	// chain's lock row (chainLockedHead).
	lockHead bool
	// busy tells the engine's error of a turn not granted within its busy timeout.
	busy func(error) bool
	// afterTip: the engine appends a group in one statement after a head the caller knows
	// (PostgreSQL's audit_chain_append, appendAfter); moved tells its error of a head that moved.
	afterTip bool
	moved    func(error) bool
	// held holds the difference found in the trail's catalog (CheckTrailCatalog), nil while none:
	// no event is linked into a trail whose tables may drop it. The log's own, not the log: a
	// transaction's body holds the chain, and the log reaches the pool.
	held *atomic.Pointer[TrailCatalogError]
	// deferrable: the engine has triggers deferred to the commit (PostgreSQL's constraint
	// triggers), which the read-back runs first (readBack).
	deferrable bool
	// notLanded tells the engine's error of a group its one-statement append read back otherwise
	// than it was written, and gives the rows it read back (audit_chain_append_read's detail).
	notLanded func(error) (string, bool)
	// unread: read nothing back (Log.withoutReadBack).
	unread bool
	// trail checks the trail's catalog in the append's own transaction (trailguard.go).
	trail trailGuard
	// expect, when set, is told each group's run (its events numbered and linked, the heads it
	// goes from and to) before its rows are sent: the audit writer tells the signers' memories of
	// its commits (CommitMemory). Without it, memories are: told before the rows are sent, and
	// once the transaction has ended whether it committed.
	expect   func(commitRun)
	memories []*CommitMemory
	// known is the chain's head as the group writer committed it last, with the tree's right
	// edge there (nil: not known).
	known *chainTip
}

// Chain is the audit chain, for a transaction of the store to append its own event to. The
// append's statements are prepared first, on the pool (prepareAuditOnce), to be kept; should that
// fail, the transaction prepares them for itself (sqltx.Tx.Cached) and meets the database's error
// there.
func (s *Log) Chain() Chain {
	_ = s.prepareAuditOnce(context.Background())
	return Chain{s.chain()}
}

// Chain is the audit chain as a transaction of the store appends to it (Append) or an import
// adopts the events it inserted (Adopt).
type Chain struct{ c auditChain }

// Append is auditChain.Append.
func (c Chain) Append(ctx context.Context, q *sqltx.Tx, events []domain.AuditEvent) error {
	return c.c.Append(ctx, q, events)
}

// Adopt is auditChain.Adopt.
func (c Chain) Adopt(ctx context.Context, q *sqltx.Tx) error { return c.c.Adopt(ctx, q) }

// chain is the log's audit chain, for a transaction to append to.
func (s *Log) chain() auditChain {
	e := s.engine
	return auditChain{signer: s.chainSigner(), arrays: e.ArrayArgs(), typed: e.TypedArgs, lockHead: !e.SingleWriter(), busy: e.IsBusy,
		afterTip: e.AppendsAfterTip(), moved: e.IsChainMoved, held: &s.trailHeld, deferrable: e.DeferredTrailChecks(), notLanded: e.NotLanded,
		unread: s.withoutReadBack, trail: s.trailGuard(), memories: s.memories.active()}
}

// Append writes events at the end of the chain in the transaction q: it locks the head,
// numbers and links each event after it, inserts them, and reads them back (readBack: a group
// that does not read back as written fails with ErrNotLanded). It is the only way an
// audit event is written (the group writer, and every transaction that records its own event),
// so that every event is chained; on PostgreSQL the group writer may also append in one
// statement after the head it committed last (appendAfter).
func (c auditChain) Append(ctx context.Context, q *sqltx.Tx, events []domain.AuditEvent) error {
	_, err := c.appendLocked(ctx, q, events)
	return err
}

// appendLocked is Append, and the chain's head after it.
func (c auditChain) appendLocked(ctx context.Context, q *sqltx.Tx, events []domain.AuditEvent) (chainTip, error) {
	if c.signer == nil {
		return chainTip{}, ErrNoChainSigner
	}
	seq, prev, err := c.lockChainHead(ctx, q)
	if err != nil && c.lockHead && c.busy(err) {
		return chainTip{}, fmt.Errorf("store: audit chain head: %w: %w", sqltx.ErrWriteWait, err)
	}
	if err != nil {
		return chainTip{}, fmt.Errorf("store: audit chain head: %w", err)
	}
	edge := c.known.edgeAt(seq, prev)
	if edge == nil {
		if edge, err = readEdge(ctx, q, seq); err != nil {
			return chainTip{}, err
		}
	}
	args, tip, written, err := c.link(chainTip{seq: seq, hash: prev}, events)
	if err != nil {
		return chainTip{}, err
	}
	tree, err := c.grow(chainTip{seq: seq, hash: prev, edge: edge}, written)
	if err != nil {
		return chainTip{}, err
	}
	tip.edge = tree.edge
	switch run := newCommitRun(chainTip{seq: seq, hash: prev, edge: edge}, written, tip); {
	case c.expect != nil:
		c.expect(run)
	case c.memories != nil:
		q.OnEnd(rememberRun(c.memories, run))
	}
	if c.arrays {
		err = insertAuditArrays(ctx, q, c.typed, args)
	} else {
		err = insertAuditRows(ctx, q, args)
	}
	err = c.trail.check(ctx, q, err)
	if err == nil {
		err = insertTree(ctx, q, c.arrays, c.typed, tree.rows)
	}
	if err != nil || c.unread {
		return tip, err
	}
	if err := readBack(ctx, q, c.deferrable, written); err != nil {
		return chainTip{}, err
	}
	return tip, readBackTree(ctx, q, tree.rows, edge)
}

// grown is what a group adds to the audit tree: its rows, and the tree's right edge after it.
type grown struct {
	rows treeRows
	edge edgeHashes
}

// grow computes the tree rows of written (numbered and linked after tip) from tip's right edge.
func (c auditChain) grow(tip chainTip, written []domain.AuditEvent) (grown, error) {
	tags, err := subjectTags(c.signer, written)
	if err != nil {
		return grown{}, err
	}
	rows, edge, err := growTree(tip.seq, tip.edge, tags, written)
	if err != nil {
		return grown{}, err
	}
	return grown{rows: rows, edge: edge}, nil
}

// chainTip is the chain's head: the newest event's sequence number and link (0 and nil on an
// empty trail; a nil link after legacy events only).
type chainTip struct {
	seq  int64
	hash []byte
	// edge is the audit tree's right edge at seq (treeEdge), nil when not known.
	edge edgeHashes
}

// edgeAt is the tree's right edge kept with tip (the group writer's last commit) when the chain's
// head is still tip: the stored rows are then read back with the group's (readBackTree) instead
// of first. Nil otherwise.
func (tip *chainTip) edgeAt(seq int64, hash []byte) edgeHashes {
	if tip == nil || tip.seq != seq || !bytes.Equal(tip.hash, hash) {
		return nil
	}
	return tip.edge
}

// link numbers and links events after tip, under the active key, giving each event without an id
// one (in events itself, so that a second try of the same group writes the same ids): their rows
// as appendAuditRow makes them, the head they end at, and the events as written (numbered, with
// their key id and link), which the read-back compares with what it reads. It links none while the
// trail's catalog is held (CheckTrailCatalog): every way an event is written passes here.
func (c auditChain) link(tip chainTip, events []domain.AuditEvent) ([]any, chainTip, []domain.AuditEvent, error) {
	if c.held != nil {
		if held := c.held.Load(); held != nil {
			return nil, chainTip{}, nil, held
		}
	}
	keyID := c.signer.ActiveKeyID()
	seq, prev := tip.seq, tip.hash
	args := make([]any, 0, auditColumns*len(events))
	written := make([]domain.AuditEvent, len(events))
	for i := range events {
		if events[i].ID == "" {
			events[i].ID = domain.NewTimeOrderedID(events[i].At)
		}
		e := events[i]
		seq++
		e.Seq, e.ChainKeyID = seq, keyID
		h, err := chainLink(c.signer, prev, e)
		if err != nil {
			return nil, chainTip{}, nil, fmt.Errorf("store: audit chain link: %w", err)
		}
		prev = h
		args = appendAuditRow(args, &e, h)
		e.Hash = hexHash(h)
		written[i] = e
	}
	return args, chainTip{seq: seq, hash: prev}, written, nil
}

// auditInsertArrays inserts any number of audit events in one statement, a column to an array:
// PostgreSQL's round trip per statement is what a group commit pays most for, and powers of two
// (insertAuditRows) take up to seven statements for a group of 127.
var auditInsertArrays = `INSERT INTO audit_events (` + Columns + `) SELECT * FROM unnest(` +
	strings.ReplaceAll("?::"+auditArrayTypes, ", ", ", ?::") + `)`

// insertAuditArrays is insertAuditRows for PostgreSQL, in one statement: args' rows as one array
// per column.
func insertAuditArrays(ctx context.Context, q *sqltx.Tx, typed func([]any) []any, args []any) error {
	arrays, err := auditArrays(args)
	if err != nil {
		return err
	}
	st, err := q.Cached(ctx, auditInsertArrays)
	if err != nil {
		return fmt.Errorf("store: audit event: %w", err)
	}
	defer st.Close()
	if _, err := st.ExecContext(ctx, typed(arrays)...); err != nil {
		return fmt.Errorf("store: audit event: %w", q.Classify(err))
	}
	return nil
}

// chainAppendAfter is migration 0020's audit_chain_append_tree: the group's rows as arrays and
// the tree rows they add, appended in one statement, in a transaction of its own, if the chain's
// head is still the one given and the tree's right edge still holds the hashes given, and read
// back in that transaction, every column compared with the rows given: it answers how many events
// read back as given, and fails (ZC002, nothing committed, the events it read back in its detail)
// when any event or tree row did not.
var chainAppendAfter = `SELECT audit_chain_append_tree(?::bigint, ?::bytea, ?::` +
	strings.ReplaceAll(auditArrayTypes, ", ", ", ?::") + `, ?::bigint[], ?::bytea[], ?::bytea[], ?::bigint[], ?::bytea[])`

// chainAppendUnread is migration 0018's audit_chain_append, which reads nothing back and writes
// no tree: only the benchmark of what the read-back costs runs it (Log.withoutReadBack).
var chainAppendUnread = `SELECT audit_chain_append(?::bigint, ?::bytea, ?::` +
	strings.ReplaceAll(auditArrayTypes, ", ", ", ?::") + `)`

// errChainMoved means the chain's head was no longer the one a group was linked after: another
// replica, or a transaction of this process recording its own event, appended since. Nothing of
// the group was written.
var errChainMoved = errors.New("store: the audit chain's head moved")

// appendAfter appends events after tip, the head the caller committed last, in one statement on
// the pool, committed when it returns (PostgreSQL): one round trip, where Append's transaction
// takes six (BEGIN, the head, the insert, SET CONSTRAINTS, the read-back, COMMIT). The statement
// reads the group back before its commit and compares it with what it was given, as Append does
// here; a group that did not land fails with ErrNotLanded, naming what differs (checkLanded, on
// the rows the statement read back), and so does an answer other than the group's size. It fails with
// errChainMoved, having written nothing, when the head is no longer tip; the caller then appends
// with Append, which reads the head under the chain's lock. It returns the head after the events.
func (c auditChain) appendAfter(ctx context.Context, q Pool, tip chainTip, events []domain.AuditEvent) (chainTip, error) {
	if c.signer == nil {
		return chainTip{}, ErrNoChainSigner
	}
	if tip.edge == nil {
		return chainTip{}, errChainMoved // the tree's edge is read under the chain's lock
	}
	args, next, written, err := c.link(tip, events)
	if err != nil {
		return chainTip{}, err
	}
	tree, err := c.grow(tip, written)
	if err != nil {
		return chainTip{}, err
	}
	next.edge = tree.edge
	arrays, err := auditArrays(args)
	if err != nil {
		return chainTip{}, err
	}
	text, args := c.trail.guarded(chainAppendAfter), append([]any{tip.seq, tip.hash}, arrays...)
	if c.unread {
		text = chainAppendUnread
	} else {
		args = append(args, tree.rows.functionArgs(tip.edge)...)
	}
	if c.expect != nil {
		c.expect(newCommitRun(tip, written, next))
	}
	var landed sql.NullInt64
	var dest any = &landed
	if c.unread {
		var void any // audit_chain_append returns nothing
		dest = &void
	}
	err = q.WriteRow(ctx, text, []any{dest}, c.typed(args)...)
	if rows, ok := c.notLanded(err); ok {
		if err := notLanded(written, rows); err != nil {
			return chainTip{}, err
		}
		return chainTip{}, &notLandedError{what: err.Error()} // the database's check saw what this one did not
	}
	switch {
	case err == nil && c.unread:
		return next, nil
	case err == nil && !landed.Valid:
		return chainTip{}, c.trail.refused(ctx, q) // the function was not called
	case err == nil:
		if landed.Int64 != int64(len(written)) {
			return chainTip{}, &notLandedError{what: fmt.Sprintf("seq %d-%d: %d of %d events read back as written", written[0].Seq, written[len(written)-1].Seq, landed.Int64, len(written))}
		}
		return next, nil
	case c.moved(err):
		return chainTip{}, errChainMoved
	case edgeMissing(err):
		return chainTip{}, &treeError{what: err.Error()}
	case c.busy(err):
		return chainTip{}, fmt.Errorf("store: audit chain head: %w: %w", sqltx.ErrWriteWait, err)
	}
	return chainTip{}, fmt.Errorf("store: audit event: %w", err)
}

// notLanded names what differs between the rows a refused one-statement append read back (its
// error's detail, JSON) and those it wrote.
func notLanded(written []domain.AuditEvent, landed string) error {
	if landed == "" {
		landed = "[]"
	}
	rows, err := landedRows(landed)
	if err != nil {
		return err
	}
	if err := checkLanded(written, rows); err != nil {
		return err
	}
	if len(rows) != len(written) {
		return &notLandedError{what: fmt.Sprintf("seq %d-%d: %d rows read back", written[0].Seq, written[len(written)-1].Seq, len(rows))}
	}
	return nil
}

// lockChainHead takes the chain's turn in q's transaction and reads its head: the newest event's sequence
// number and link (0 and nil on an empty trail; a nil link after legacy events only).
func (c auditChain) lockChainHead(ctx context.Context, q *sqltx.Tx) (seq int64, hash []byte, err error) {
	text := chainHead
	if c.lockHead {
		text = chainLockedHead
	}
	head, err := q.Cached(ctx, text)
	if err != nil {
		return 0, nil, err
	}
	defer head.Close()
	err = head.QueryRowContext(ctx).Scan(&seq, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil, nil
	}
	return seq, hash, q.Classify(err)
}

// insertAuditRows (SQLite) inserts events' rows (auditColumns values each) in as few multi-row
// INSERTs as powers of two allow (11 rows are 8 + 2 + 1): running a statement costs more than the rows it
// carries. There is one text per power of two up to maxAuditGroup, each a cached prepared
// statement: parsing and planning anew for every group was most of a group's cost.
func insertAuditRows(ctx context.Context, q *sqltx.Tx, args []any) error {
	for len(args) > 0 {
		rows := len(args) / auditColumns
		n := 1 << (bits.Len(uint(min(rows, maxAuditGroup))) - 1)
		st, err := q.Cached(ctx, auditInsertRows[bits.Len(uint(n))-1])
		if err != nil {
			return fmt.Errorf("store: audit event: %w", err)
		}
		_, err = st.ExecContext(ctx, args[:n*auditColumns]...)
		st.Close()
		if err != nil {
			return fmt.Errorf("store: audit event: %w", q.Classify(err))
		}
		args = args[n*auditColumns:]
	}
	return nil
}

// prepareAuditOnce prepares the appends' statements on the pool, outside any transaction, to be
// kept: a statement the pool lacks is prepared anew by each transaction that runs it
// (sqltx.Tx.Cached).
func (s *Log) prepareAuditOnce(ctx context.Context) error {
	if s.auditPrepared.Load() {
		return nil
	}
	texts := append([]string{chainHead, auditReadBack}, auditInsertRows...)
	texts = append(texts, treeInsertRows...)
	texts = append(texts, treeReadBacks...)
	texts = append(texts, s.trailGuard().appendReads()...)
	for _, text := range texts {
		if err := s.db.Prepare(ctx, text); err != nil {
			return fmt.Errorf("store: audit event: %w", err)
		}
	}
	s.auditPrepared.Store(true)
	return nil
}

// hexHash is a stored link as the API and the dataset show it ("" for an unchained event).
func hexHash(h []byte) string {
	if h == nil {
		return ""
	}
	return hex.EncodeToString(h)
}
