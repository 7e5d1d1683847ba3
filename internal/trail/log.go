package trail

import (
	"context"

	"backoffice/internal/domain"
	"golang.org/x/mod/sumdb/tlog"
)

// Log is the audit trail's tree as its readers (checkpoints, tiles, proofs) read it from where it
// is stored (*store.Store is one): the number of leaves, tlog's stored hashes by their indexes
// (an index not stored is an error), the leaves of a range, and the events at the leaves.
type Log interface {
	AuditTreeSize(ctx context.Context) (int64, error)
	ReadAuditHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error)
	AuditHashReader(ctx context.Context) tlog.HashReader
	AuditLeaves(ctx context.Context, start, end int64) ([][]byte, error)
	AuditEventAt(ctx context.Context, index int64) (domain.AuditEvent, error)
	AuditEventIndex(ctx context.Context, id domain.ID) (domain.AuditEvent, int64, error)
}
