package auditlog

import (
	"context"
	"fmt"

	"backoffice/internal/sqltx"
)

// Adopt makes the audit events an import inserted with their place in the chain this database's
// chain (see bulkload.Bulk.AdoptAuditChain): the genesis names the file's events before its first
// link as the ones from before the chain, the whole chain must verify under the ring (the file
// names the first bad event otherwise), and the genesis is sealed as the walk proved it. A file
// with no link at all is a trail from before the chain, taken on trust as its first opening is.
func (c auditChain) Adopt(ctx context.Context, q *sqltx.Tx) error {
	if c.signer == nil {
		return ErrNoChainSigner
	}
	ver, ok := c.signer.(ChainVerifier)
	if !ok {
		return fmt.Errorf("store: import: the chain signer lists no keys to verify the file's chain with")
	}
	var last int64
	err := q.QueryRow(ctx, `SELECT COALESCE(MIN(seq) - 1, (SELECT MAX(seq) FROM audit_events), 0) FROM audit_events WHERE hash IS NOT NULL`).Scan(&last)
	if err != nil {
		return fmt.Errorf("store: import: %w", err)
	}
	if _, err := q.Exec(ctx, `UPDATE audit_chain_genesis SET last_unlinked_seq = ?, chain_key_id = NULL, mac = NULL WHERE id = 1`, last); err != nil {
		return fmt.Errorf("store: import: audit chain genesis: %w", err)
	}
	// The file's events get their leaves in the audit tree, for the walk to check and the
	// events appended after them to grow from.
	for {
		n, err := c.buildTreeBatch(ctx, q)
		if err != nil {
			return fmt.Errorf("store: import: %w", err)
		}
		if n == 0 {
			break
		}
	}
	rep, err := walkChain(ctx, q, ver, nil)
	if err != nil {
		return fmt.Errorf("store: import: %w", err)
	}
	v, err := rep.onTrust()
	if err != nil {
		return err
	}
	_, err = sealGenesis(ctx, q, c.signer, v)
	return err
}
