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
// and records each in schema_migrations. Under the engine's lock, replicas starting together
// migrate once.
func migrate(ctx context.Context, db *sql.DB, e Engine) error { return migrateTo(ctx, db, e, "") }

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
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	defer conn.Close()
	pass := func() error {
		if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY)`); err != nil {
			return fmt.Errorf("store: migrations table: %w", err)
		}
		for _, name := range names {
			if err := applyMigration(ctx, conn, e, name); err != nil {
				return err
			}
		}
		return nil
	}
	return e.LockMigrations(ctx, conn, pass)
}

func migrationNames(e Engine) ([]string, error) {
	names, err := fs.Glob(e.Migrations(), "*.sql")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

func applyMigration(ctx context.Context, conn *sql.Conn, e Engine, name string) error {
	version := strings.TrimSuffix(name, ".sql")
	body, err := fs.ReadFile(e.Migrations(), name)
	if err != nil {
		return err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: migration %s: %w", version, err)
	}
	defer tx.Rollback()
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
	if err := s.q().row(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&applied); err != nil {
		return 0, fmt.Errorf("store: pending migrations: %w", err)
	}
	return len(names) - applied, nil
}
