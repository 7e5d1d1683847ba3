package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/bits"
	"strings"

	"backoffice/internal/domain"
	"backoffice/internal/store/column"
	"backoffice/internal/store/sqltx"
)

// ChainSigner makes the audit chain's links: HMAC-SHA-256 under a key derived from the master
// key keyID (*secrets.Ring is one). New links are made under ActiveKeyID; any key it holds checks
// old ones.
type ChainSigner interface {
	ActiveKeyID() string
	ChainMAC(keyID string, message []byte) ([]byte, error)
}

// ErrNoChainSigner means an audit event was to be written by a store given no ChainSigner: an
// event without its link would break the chain, so none is written.
var ErrNoChainSigner = errors.New("store: audit events are chained under the master key ring, and this store was given none (set BACKOFFICE_MASTER_KEY or BACKOFFICE_MASTER_KEYS)")

// SetChainSigner gives the store the signer of the audit chain. Call it once, before the store
// writes audit events (serve, and the commands that write events, do so when they open it).
func (s *Store) SetChainSigner(sig ChainSigner) { s.signer = sig }

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
	return appendEvent(make([]byte, 0, 256+len(e.Detail)), "backoffice audit event v1", prev, e)
}

// appendEvent appends the label, prev and every stored field of e but its link, in the encoding
// of chainMessage (ChainDigest's message shares it).
func appendEvent(b []byte, label string, prev []byte, e domain.AuditEvent) []byte {
	b = appendText(b, label)
	b = appendField(b, prev)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Seq))
	for _, f := range []string{e.ChainKeyID, string(e.ID)} {
		b = appendText(b, f)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(column.Micros(e.At)))
	for _, f := range []string{string(e.ActorUserID), e.Action, e.TargetID, e.Outcome, e.Detail} {
		b = appendText(b, f)
	}
	return b
}

func appendField(b, f []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
	return append(b, f...)
}

func appendText(b []byte, f string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
	return append(b, f...)
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
// begins: a transaction's body is given the transaction alone (see Store.tx).
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
	// held is the difference found in the trail's catalog (CheckTrailCatalog), nil while none:
	// no event is linked into a trail whose tables may drop it.
	held func() error
}

// chain is the store's audit chain, for a transaction to append to.
func (s *Store) chain() auditChain {
	pg := s.engine.Name() == "postgres"
	return auditChain{signer: s.signer, arrays: pg, typed: s.engine.TypedArgs, lockHead: !s.engine.SingleWriter(), busy: s.engine.IsBusy,
		afterTip: pg, moved: s.engine.IsChainMoved, held: s.TrailCatalogHeld}
}

// Append writes events at the end of the chain in the transaction q: it locks the head,
// numbers and links each event after it, inserts them, and moves the head. It is the only way an
// audit event is written (the group writer, and every transaction that records its own event),
// so that every event is chained; on PostgreSQL the group writer may also append in one
// statement after the head it committed last (appendAfter).
func (c auditChain) Append(ctx context.Context, q *sqltx.Tx, events []domain.AuditEvent) error {
	_, err := c.appendLocked(ctx, q, events, nil)
	return err
}

// appendLocked is Append, and the chain's head after it. With at, it appends only if the read
// cache's generation, read in q after the chain's turn was taken, is still *at (ErrStale
// otherwise).
func (c auditChain) appendLocked(ctx context.Context, q *sqltx.Tx, events []domain.AuditEvent, at *int64) (chainTip, error) {
	if c.signer == nil {
		return chainTip{}, ErrNoChainSigner
	}
	seq, prev, err := c.lockChainHead(ctx, q)
	if err != nil && c.lockHead && c.busy(err) {
		return chainTip{}, fmt.Errorf("store: audit chain head: %w: %w", ErrWriteWait, err)
	}
	if err != nil {
		return chainTip{}, fmt.Errorf("store: audit chain head: %w", err)
	}
	if at != nil {
		var n int64
		if err := q.QueryRow(ctx, generationQuery).Scan(&n); err != nil {
			return chainTip{}, fmt.Errorf("store: audit event: the read cache's generation: %w", err)
		}
		if n != *at {
			return chainTip{}, ErrStale
		}
	}
	args, tip, err := c.link(chainTip{seq: seq, hash: prev}, events)
	if err != nil {
		return chainTip{}, err
	}
	if c.arrays {
		return tip, insertAuditArrays(ctx, q, c.typed, args)
	}
	return tip, insertAuditRows(ctx, q, args)
}

// chainTip is the chain's head: the newest event's sequence number and link (0 and nil on an
// empty trail; a nil link after legacy events only).
type chainTip struct {
	seq  int64
	hash []byte
}

// link numbers and links events after tip, under the active key, giving each event without an id
// one (in events itself, so that a second try of the same group writes the same ids): their rows
// as appendAuditRow makes them, and the head they end at. It links none while the trail's catalog
// is held (CheckTrailCatalog): every way an event is written passes here.
func (c auditChain) link(tip chainTip, events []domain.AuditEvent) ([]any, chainTip, error) {
	if c.held != nil {
		if err := c.held(); err != nil {
			return nil, chainTip{}, err
		}
	}
	keyID := c.signer.ActiveKeyID()
	seq, prev := tip.seq, tip.hash
	args := make([]any, 0, auditColumns*len(events))
	for i := range events {
		if events[i].ID == "" {
			events[i].ID = domain.NewTimeOrderedID(events[i].At)
		}
		e := events[i]
		seq++
		e.Seq, e.ChainKeyID = seq, keyID
		h, err := chainLink(c.signer, prev, e)
		if err != nil {
			return nil, chainTip{}, fmt.Errorf("store: audit chain link: %w", err)
		}
		prev = h
		args = appendAuditRow(args, &e, h)
	}
	return args, chainTip{seq: seq, hash: prev}, nil
}

// auditInsertArrays inserts any number of audit events in one statement, a column to an array:
// PostgreSQL's round trip per statement is what a group commit pays most for, and powers of two
// (insertAuditRows) take up to seven statements for a group of 127.
var auditInsertArrays = `INSERT INTO audit_events (` + AuditColumns + `) SELECT * FROM unnest(` +
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

// chainAppendAfter is migration 0018's audit_chain_append: the group's rows as arrays, appended
// in one statement, in a transaction of its own, if the chain's head is still the one given.
var chainAppendAfter = `SELECT audit_chain_append(?::bigint, ?::bytea, ?::` +
	strings.ReplaceAll(auditArrayTypes, ", ", ", ?::") + `)`

// chainAppendAfterAt is chainAppendAfter on the condition that the read cache's generation is
// still the one given (the last argument), read in the same statement: one row when it is and the
// group was appended, none when it is not and nothing was.
var chainAppendAfterAt = chainAppendAfter + ` FROM cache_generation WHERE id = 1 AND n = ?::bigint`

// errChainMoved means the chain's head was no longer the one a group was linked after: another
// replica, or a transaction of this process recording its own event, appended since. Nothing of
// the group was written.
var errChainMoved = errors.New("store: the audit chain's head moved")

// appendAfter appends events after tip, the head the caller committed last, in one statement on
// the pool, committed when it returns (PostgreSQL): one round trip, where Append's transaction
// takes four (BEGIN, the head, the insert, COMMIT). It fails with errChainMoved, having written
// nothing, when the head is no longer tip; the caller then appends with Append, which reads the
// head under the chain's lock. It returns the head after the events.
func (c auditChain) appendAfter(ctx context.Context, q querier, tip chainTip, events []domain.AuditEvent, at *int64) (chainTip, error) {
	if c.signer == nil {
		return chainTip{}, ErrNoChainSigner
	}
	args, next, err := c.link(tip, events)
	if err != nil {
		return chainTip{}, err
	}
	arrays, err := auditArrays(args)
	if err != nil {
		return chainTip{}, err
	}
	text, args := chainAppendAfter, append([]any{tip.seq, tip.hash}, arrays...)
	if at != nil {
		text, args = chainAppendAfterAt, append(args, *at)
	}
	res, err := q.Exec(ctx, text, c.typed(args)...)
	switch {
	case err == nil && at != nil:
		n, err := res.RowsAffected()
		if err != nil { // whether the group was appended is not known: a failure, never ErrStale
			return chainTip{}, fmt.Errorf("store: audit event: the append's row count: %w", err)
		}
		if n != 1 {
			return chainTip{}, ErrStale // the generation moved: the function did not run
		}
		return next, nil
	case err == nil:
		return next, nil
	case c.moved(err):
		return chainTip{}, errChainMoved
	case c.busy(err):
		return chainTip{}, fmt.Errorf("store: audit chain head: %w: %w", ErrWriteWait, err)
	}
	return chainTip{}, fmt.Errorf("store: audit event: %w", err)
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

// prepareAudit prepares the audit writer's statements on the pool, outside any transaction (see
// sqltx.Tx.Cached): a statement first prepared inside one needs a second connection, which a pool
// of one never has while the transaction holds its connection.
func (s *Store) prepareAudit(ctx context.Context) error {
	for _, text := range append([]string{chainHead}, auditInsertRows...) {
		if _, err := s.stmts.Get(ctx, s.sql(text)); err != nil {
			return fmt.Errorf("store: audit event: %w", s.classify(err))
		}
	}
	return nil
}

// hexHash is a stored link as the API and the dataset show it ("" for an unchained event).
func hexHash(h []byte) string {
	if h == nil {
		return ""
	}
	return hex.EncodeToString(h)
}
