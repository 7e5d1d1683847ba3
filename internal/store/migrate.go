package store

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// migrate applies the engine's embedded migrations in name order, each in its own transaction,
// and records each in schema_migrations. Each transaction takes the engine's migration lock first,
// so that of replicas starting together one applies a migration and the others then find it
// recorded.
func migrate(ctx context.Context, db *sql.DB, e Engine) error { return migrateTo(ctx, db, e, "") }

// Migrate applies pending schema migrations, then has the engine purge deleted bytes it may still
// keep from before a crash (SQLite: a WAL left behind).
func (s *Store) Migrate(ctx context.Context) error {
	if err := migrate(ctx, s.db, s.engine); err != nil {
		return err
	}
	s.engine.PurgeDeleted(ctx, s.db)
	return nil
}

// migrateTo is migrate up to and including the migration last ("" for all of them), so that tests
// can build a database as an older release left it.
func migrateTo(ctx context.Context, db *sql.DB, e Engine, last string) error {
	names, err := migrationNames(e)
	if err != nil {
		return err
	}
	if last != "" {
		i := slices.Index(names, last+".sql")
		if i < 0 {
			return fmt.Errorf("store: no migration %s", last)
		}
		names = names[:i+1]
	}
	for _, name := range names {
		if err := applyMigration(ctx, db, e, name); err != nil {
			return err
		}
	}
	return nil
}

func migrationNames(e Engine) ([]string, error) {
	names, err := fs.Glob(e.Migrations(), "*.sql")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// applyMigration applies one migration unless it is recorded, in one transaction that holds the
// migration lock from its first statement: the lock, the migrations table (created by the first
// process to get there) and the check that the migration is still to apply are all in it, so no
// session state outlives it (a transaction-mode pooler may give the next one another server
// connection).
func applyMigration(ctx context.Context, db *sql.DB, e Engine, name string) error {
	version := strings.TrimSuffix(name, ".sql")
	body, err := fs.ReadFile(e.Migrations(), name)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: migration %s: %w", version, err)
	}
	defer tx.Rollback()
	if err := e.LockMigrations(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY)`); err != nil {
		return fmt.Errorf("store: migrations table: %w", err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, e.Rebind(`SELECT count(*) FROM schema_migrations WHERE version = ?`), version).Scan(&n); err != nil {
		return fmt.Errorf("store: migration %s: %w", version, err)
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, string(body)); err != nil {
		return fmt.Errorf("store: migration %s: %w", version, err)
	}
	if _, err := tx.ExecContext(ctx, e.Rebind(`INSERT INTO schema_migrations (version) VALUES (?)`), version); err != nil {
		return fmt.Errorf("store: migration %s: %w", version, err)
	}
	return tx.Commit()
}

// Pending reports how many embedded migrations have not been applied, for readiness checks.
func (s *Store) Pending(ctx context.Context) (int, error) {
	names, err := migrationNames(s.engine)
	if err != nil {
		return 0, err
	}
	var applied int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&applied); err != nil {
		return 0, fmt.Errorf("store: pending migrations: %w", err)
	}
	return len(names) - applied, nil
}
