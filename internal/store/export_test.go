package store

import "context"

// Hooks for the external tests of this package.

// MigrateTo applies the migrations up to and including version, as an older release left the
// database.
func MigrateTo(ctx context.Context, s *Store, version string) error {
	return migrateTo(ctx, s.db, s.engine, version)
}

// Exec runs shared SQL on the store, outside any operation: tests write rows as an older schema
// held them.
func Exec(ctx context.Context, s *Store, query string, args ...any) error {
	_, err := s.q().exec(ctx, query, args...)
	return err
}
