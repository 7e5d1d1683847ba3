package store

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
	"backoffice/internal/store/bulkload"
)

// Hooks for the external tests of this package.

// MigrateTo applies the migrations up to and including version, as an older release left the
// database.
func MigrateTo(ctx context.Context, s *Store, version string) error {
	return migrateTo(ctx, s.db, s.engine, version)
}

// Exec runs shared SQL on the store, outside any operation: tests write rows as an older schema
// held them.
func Exec(ctx context.Context, s *Store, query string, args ...any) error {
	_, err := s.pool.Exec(ctx, query, args...)
	return err
}

// ListSAMActionLogs is a page of the entity's logs as staff see it: what the service must answer,
// for tests and benchmarks to compare with.
func ListSAMActionLogs(ctx context.Context, s *Store, entity domain.ID, page, size int64) ([]domain.SAMActionLog, int64, error) {
	logs, total, _, err := s.ListVisibleSAMActionLogs(ctx, domain.Scope{}, entity, page, size)
	return logs, total, err
}

// Count counts a table's rows.
func Count(ctx context.Context, s *Store, table string) (n int, err error) {
	err = s.pool.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n)
	return n, err
}

// CachedReads counts the reads the store's cache holds.
func CachedReads(s *Store) int {
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	return len(s.cache.entries)
}

// WithoutReadCache turns the store's read cache off, for benchmarks of the reads themselves.
func WithoutReadCache(s *Store) { s.cache = nil }

// InTx runs fn in one of the store's write transactions, as its operations do.
func InTx(ctx context.Context, s *Store, fn func(q *sqltx.Tx) error) error { return s.pool.Tx(ctx, fn) }

// AppendAudit appends e to the audit chain in the transaction q, as an operation that records its
// own event does.
func AppendAudit(ctx context.Context, s *Store, q *sqltx.Tx, e domain.AuditEvent) error {
	return s.trailLog.Chain().Append(ctx, q, []domain.AuditEvent{e})
}

// SetBusyWait shortens how long this process's writers wait for each other (the engine's busy
// timeout), on an engine that queues them (SQLite), of a store opened with the default pool and
// not yet written to: its pool is made again, in place, so that the trail's sees it too.
func SetBusyWait(s *Store, d time.Duration) {
	p := DefaultPool().forStatements(s.engine)
	p.BusyWait = d
	s.pool.Close()
	*s.pool = *sqltx.NewDB(s.db, s.engine, p)
}

// CachedReadQueries are the statements of each read the read cache keeps, a list per read.
func CachedReadQueries() [][]string {
	var out [][]string
	for r := range cachedReads {
		out = append(out, r.queries())
	}
	return out
}

// DB is the store's own pool: tests run SQL on the very connections the store uses.
func DB(s *Store) *sql.DB { return s.db }

// WaitBackground waits for the store's background writes (last-use stamps), as Close does.
func WaitBackground(s *Store) { s.waitBackground() }

// AddMerchantNote writes a note on a merchant, as a push's note is written.
func AddMerchantNote(ctx context.Context, s *Store, n domain.MerchantNote) error {
	return insertNote(ctx, s.pool, n)
}

// RefuseWrites makes the store's database refuse every write from now on, as a read-only database
// does (SQLite's query_only; a PostgreSQL session in read-only mode, as on a standby), or take
// them again when refuse is false. Reads are still answered. The store's pool is cut to one
// connection (onOneConnection).
func RefuseWrites(t testing.TB, s *Store, refuse bool) {
	t.Helper()
	if s.Engine() == "postgres" {
		value := map[bool]string{true: "on", false: "off"}[refuse]
		onOneConnection(t, s, "SET default_transaction_read_only = "+value, "SHOW default_transaction_read_only", value)
		return
	}
	onOneConnection(t, s, fmt.Sprintf("PRAGMA query_only = %t", refuse), "PRAGMA query_only", map[bool]string{true: "1", false: "0"}[refuse])
}

// onOneConnection cuts the store's pool to one connection and makes the setting set on it, so
// that it holds for every statement the store runs. A connection the store holds meanwhile
// (SQLite's background checkpoint) may be the one kept, and the one set closed, so the setting is
// made until the one connection left reads it back as want (show).
func onOneConnection(t testing.TB, s *Store, set, show, want string) {
	t.Helper()
	ctx := context.Background()
	s.db.SetMaxOpenConns(1)
	for range 100 {
		if _, err := s.db.ExecContext(ctx, set); err != nil {
			t.Fatalf("%s: %v", set, err)
		}
		var got string
		if err := s.db.QueryRowContext(ctx, show).Scan(&got); err != nil {
			t.Fatalf("%s: %v", show, err)
		}
		if got == want && s.db.Stats().OpenConnections == 1 {
			return
		}
	}
	t.Fatalf("%s: the setting did not hold", set)
}

// CountGenerationMoves has s's engine count, in *moves, the moves of the read cache's generation
// that its imports make themselves (Engine.BeginImport's Moved).
func CountGenerationMoves(s *Store, moves *int) {
	counted := movesCounted{Engine: s.engine, moves: moves}
	if c, ok := s.engine.(bulkload.Copier); ok {
		s.engine = movesCountedCopier{counted, c}
		return
	}
	s.engine = counted
}

type movesCounted struct {
	Engine
	moves *int
}

func (e movesCounted) BeginImport(ctx context.Context, tx *sql.Tx) (sqltx.Import, error) {
	imp, err := e.Engine.BeginImport(ctx, tx)
	if err != nil {
		return nil, err
	}
	return importCounted{imp, e.moves}, nil
}

type importCounted struct {
	sqltx.Import
	moves *int
}

func (i importCounted) Moved() error { *i.moves++; return i.Import.Moved() }

type movesCountedCopier struct {
	movesCounted
	bulkload.Copier
}

// UseStatements has the store keep its prepared statements (keep) or hand each text to
// database/sql every run, until restore: the benchmark of the prepared statement cache beside
// the text sent each run. The pool is rebuilt in place, so the audit trail, which holds it, runs
// the same way.
func UseStatements(s *Store, keep bool) (restore func()) {
	old := *s.pool
	*s.pool = *sqltx.NewDB(s.db, keeping{s.engine, keep}, DefaultPool().forStatements(s.engine))
	return func() {
		s.pool.Close()
		*s.pool = old
	}
}

// keeping is an engine that keeps prepared statements or not, as told.
type keeping struct {
	Engine
	keep bool
}

func (k keeping) KeepsStatements() bool { return k.keep }

// Generation reads the read cache's generation, as every cached read does first.
func Generation(ctx context.Context, s *Store) (int64, error) {
	return generation{pool: s.pool, engine: s.engine}.Version(ctx)
}
