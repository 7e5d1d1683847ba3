package auditlog

import (
	"context"
	"strings"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// Hooks for the external tests of this package.

// LimitMemory makes m remember at most n events.
func LimitMemory(m *CommitMemory, n int) { m.limit = n }

// RowsRead counts the rows f's walks read by seq.
func RowsRead(f *Follower) int64 { return f.read }

// WithoutReadBack makes l's audit appends read nothing back, as before the read-back: for its
// benchmark alone.
func WithoutReadBack(l *Log) { l.withoutReadBack = true }

// WithoutTrailGuard makes l's audit appends check nothing of the trail's catalog in their own
// transactions: for the benchmark of what the check costs alone.
func WithoutTrailGuard(l *Log) { l.withoutTrailGuard = true }

// ChainLink is the link of e after prev under e's key: what someone holding that key could write.
func ChainLink(sig ChainSigner, prev []byte, e domain.AuditEvent) ([]byte, error) {
	return chainLink(sig, prev, e)
}

// FollowPage is how many events a follower walks between rests.
const FollowPage = followPage

// FollowAuditChainResting is l.FollowAuditChain with a follower whose walks call rest, not
// pause.For, after each full page: a test counts the rests, a benchmark skips them (NoRest).
func FollowAuditChainResting(ctx context.Context, l *Log, rest func(context.Context, time.Duration) error, ver ChainVerifier, base *ChainExpect, mem *CommitMemory) (*Follower, error) {
	return l.follow(ctx, newFollower(l, ver, mem, rest), base)
}

// NoRest rests not at all: a follower built with it measures the walk's own work.
func NoRest(context.Context, time.Duration) error { return nil }

// TrailCatalog is the audit trail's catalog as CheckTrailCatalog reads it, a line per object, and
// the lines the engine expects.
func TrailCatalog(ctx context.Context, l *Log) (got, expected []string, err error) {
	query, want := l.engine.TrailCatalog()
	got, err = l.trailCatalog(ctx, query)
	return got, strings.Split(strings.TrimSuffix(string(want), "\n"), "\n"), err
}

// Count counts a table's rows.
func Count(ctx context.Context, l *Log, table string) (n int, err error) {
	err = l.db.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n)
	return n, err
}

// InTx runs fn in one of the store's write transactions, as its operations do.
func InTx(ctx context.Context, l *Log, fn func(q *sqltx.Tx) error) error { return l.db.Tx(ctx, fn) }

// AppendAuditGroup appends events to the audit chain in the transaction q in one group, as the
// group writer does: the bench's way to build a long trail quickly with the trail's own writer.
func AppendAuditGroup(ctx context.Context, l *Log, q *sqltx.Tx, events []domain.AuditEvent) error {
	return l.chain().Append(ctx, q, events)
}
