package store

import (
	"context"
	"database/sql"
	"fmt"

	"backoffice/internal/auditlog"
	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
	"backoffice/internal/store/bulkload"
)

// The store's side of moving records in bulk (package bulkload holds their SQL): the import's
// transaction, the export's snapshot, and the audit chain as an import writes to it.

// Load runs fn in one transaction, committed when fn returns nil: all of it, or nothing. It
// holds the engine's import lock (two imports counting logs into one entity's SAM log buckets at
// once would lose counts) and runs under the engine's bulk-load settings.
func (s *Store) Load(ctx context.Context, fn func(b *bulkload.Bulk) error) error {
	engine, chain := s.engine, s.trailLog.Chain()
	return s.loadTx(ctx, func(q *sqltx.Tx) error {
		imp, err := engine.BeginImport(ctx, q.SQL())
		if err != nil {
			return fmt.Errorf("store: import: %w", q.Classify(err))
		}
		defer imp.End()
		ic := &importChain{chain: chain}
		if !engine.SingleWriter() {
			ic.moved = imp
		}
		if err := bulkload.Run(ctx, q, engine, ic, fn); err != nil {
			return err
		}
		if ic.moved != nil {
			// The triggers owe the generation a move for what the import wrote, made as it
			// commits: moved was only for taking the generation before the chain.
			return nil
		}
		if err := imp.Moved(); err != nil {
			return fmt.Errorf("store: import: %w", q.Classify(err))
		}
		return nil
	})
}

// importChain is the audit chain as an import writes to it. An event the file gives without its
// place in the chain is appended as any event written now, but an anchor, which only `keys
// rewrap` makes (of the trail it verified just before), is refused. The import moves the read cache's
// generation, and so takes its lock, before it first takes the chain's head: the order of every
// other writer of both (a credential's issue or revocation changes its row, whose trigger moves
// the generation, then records its event), so that no two of them wait for each other in a
// cycle. An import with no audit events takes the generation only as it commits, when the
// triggers make the move they owe. On an engine with one writer at a time (SQLite) no two
// writers hold locks at once: moved is nil, and the triggers stay aside until the end (the SAM
// logs come after the audit events).
type importChain struct {
	chain auditlog.Chain
	moved sqltx.Import // nil: nothing to take first
	took  bool         // the generation, already
}

func (c *importChain) Append(ctx context.Context, q *sqltx.Tx, events []domain.AuditEvent) error {
	for _, e := range events {
		if e.Action == auditlog.ActionAnchor {
			return fmt.Errorf("store: import: audit event %s is an anchor (%s) without its place in the chain: anchors are made only by `backoffice keys rewrap`, of the trail it verified", e.ID, auditlog.ActionAnchor)
		}
	}
	if err := c.takeGeneration(q); err != nil {
		return err
	}
	return c.chain.Append(ctx, q, events)
}

func (c *importChain) Adopt(ctx context.Context, q *sqltx.Tx) error {
	if err := c.takeGeneration(q); err != nil {
		return err
	}
	return c.chain.Adopt(ctx, q)
}

func (c *importChain) takeGeneration(q *sqltx.Tx) error {
	if c.took || c.moved == nil {
		return nil
	}
	if err := c.moved.Moved(); err != nil {
		return fmt.Errorf("store: import: %w", q.Classify(err))
	}
	c.took = true
	return nil
}

// loadTx runs fn in a transaction as Store.tx does; for a Copier engine the transaction is begun
// on a connection held for it (sqltx.Tx.Conn), for the copies to run inside it.
func (s *Store) loadTx(ctx context.Context, fn func(q *sqltx.Tx) error) error {
	if _, ok := s.engine.(bulkload.Copier); !ok {
		return s.pool.Tx(ctx, fn)
	}
	var conn *sql.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	begin := func() (*sql.Tx, *sql.Conn, error) {
		if conn != nil { // begun again: the first connection was lost
			conn.Close()
			conn = nil
		}
		c, err := s.db.Conn(ctx)
		if err != nil {
			return nil, nil, err
		}
		conn = c
		tx, err := conn.BeginTx(ctx, nil)
		return tx, conn, err
	}
	return s.pool.TxOn(ctx, begin, fn)
}

// Dump runs fn on one consistent snapshot of the database, without blocking writers.
func (s *Store) Dump(ctx context.Context, fn func(sn *bulkload.Snapshot) error) error {
	return s.pool.Snapshot(ctx, func(q *sqltx.Tx) error { return fn(bulkload.NewSnapshot(ctx, q)) })
}

// StoredSAMLogIDs says, for each of ids, whether a stored SAM action log has it (see
// bulkload.StoredSAMLogIDs): after an import that failed with bulkload.ErrSAMLogTaken, which.
func (s *Store) StoredSAMLogIDs(ctx context.Context, ids []domain.ID) ([]bool, error) {
	return bulkload.StoredSAMLogIDs(ctx, s.pool, ids)
}

// PurgeDeleted has the engine drop the copies of deleted bytes it still keeps (SQLite's WAL), as
// the document delete does: after an import deleted or replaced principals (sealed SSNs) or
// documents. It returns at once.
func (s *Store) PurgeDeleted(ctx context.Context) { s.purgeDeleted(ctx) }

// IsEmpty reports whether the database holds no partners, the root of every other record.
func (s *Store) IsEmpty(ctx context.Context) (bool, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM partners`).Scan(&n); err != nil {
		return false, fmt.Errorf("store: %w", err)
	}
	return n == 0, nil
}
