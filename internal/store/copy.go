package store

import (
	"context"
	"fmt"

	"backoffice/internal/store/bulkload"
)

// CopyTo copies the whole database into dst, of either engine, whose migrations have run: every
// row of every table bulkload.CopiedTables names and the audit chain's genesis, as stored
// (bulkload.CopyDatabase). It reads one snapshot of s and writes in one transaction of dst's, as an
// import does (its lock, its triggers' moves of the read cache's generation made once, by its
// commit): all of it, or nothing. It refuses a target that holds rows
// (bulkload.ErrTargetNotEmpty) and a table of either database it does not know, and needs no
// master key: sealed SSNs, hashes and the chain's links go over as bytes.
func (s *Store) CopyTo(ctx context.Context, dst *Store, progress bulkload.CopyProgress) error {
	q, end, err := s.pool.OpenSnapshot(ctx)
	if err != nil {
		return err
	}
	defer end()
	src := bulkload.NewSnapshot(ctx, q)
	from, err := src.Catalog(s.engine.Catalog())
	if err != nil {
		return fmt.Errorf("store: copy: source %w", err)
	}
	catalog := dst.engine.Catalog()
	return dst.Load(ctx, func(b *bulkload.Bulk) error {
		to, err := b.Catalog(catalog)
		if err != nil {
			return fmt.Errorf("store: copy: target %w", err)
		}
		if err := b.CopyDatabase(src, from, to, progress); err != nil {
			return fmt.Errorf("store: copy: %w", err)
		}
		return nil
	})
}
