// Package store keeps the back office's records in SQL: embedded SQLite by default, PostgreSQL at
// scale. Queries are written once, in plain sight, in the SQL both engines share; the engine
// packages (store/sqlite, store/postgres) supply how to connect, their migrations, their
// placeholder style and their error codes.
package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"backoffice/internal/auditlog"
	"backoffice/internal/sqltx"
	"backoffice/internal/store/postgres"
	"backoffice/internal/store/sqlite"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Store is a handle on one database.
type Store struct {
	db     *sql.DB
	engine Engine
	// pool runs the store's SQL on db, and its transactions (s.pool.Tx, s.pool.Snapshot).
	pool *sqltx.DB
	// trailLog is the audit trail, on the same pool; its methods are the store's.
	*trailLog
	// background tracks writes that run after the request that caused them (last-use stamps).
	background sync.WaitGroup
	// cache keeps the per-request reads while what they read is unchanged (see readCache and
	// generation); nil only in benchmarks of the reads themselves.
	cache *readCache
	// stamps holds, per API key, the last use this process stamped or is stamping (see
	// NoteAPIKeyUse).
	stamps lastUseStamps
}

// Open connects to the database named by url ("sqlite:PATH" or "postgres://…") and checks that
// it answers. Without options the pool is DefaultPool.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	o := collect(opts)
	var db *sql.DB
	var e Engine
	var err error
	switch {
	case strings.HasPrefix(url, "sqlite:"):
		db, e, err = sqlite.Open(ctx, strings.TrimPrefix(url, "sqlite:"), !o.mustExist)
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		db, e, err = postgres.Open(ctx, url)
	default:
		return nil, fmt.Errorf("store: database url must start with sqlite: or postgres://")
	}
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	o.pool.apply(db)
	s := &Store{db: db, engine: e, pool: sqltx.NewDB(db, e, o.pool.forStatements(e))}
	s.cache = newReadCache(newCheckRounds(generation{pool: s.pool, engine: e}))
	s.trailLog = auditlog.New(s.pool, e)
	return s, nil
}

// Engine names the engine: "sqlite" or "postgres".
func (s *Store) Engine() string { return s.engine.Name() }

// DBSystem names the engine as OpenTelemetry's semantic conventions do (db.system.name), for the
// traced store's spans.
func (s *Store) DBSystem() string { return s.engine.DBSystem() }

// Close waits for background writes, then releases the database. Callers stop using the store
// first (serve closes it after the HTTP server has drained).
func (s *Store) Close() error {
	s.waitBackground()
	s.trailLog.Close()
	s.engine.Close()
	s.pool.Close()
	return s.db.Close()
}

// waitBackground waits for background bookkeeping (last-use stamps) to be written. Close calls
// it before it releases the database.
func (s *Store) waitBackground() { s.background.Wait() }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Classify(s.db.PingContext(ctx)) }

// PoolCollector is client_golang's collector of the connection pool's statistics (go_sql_*,
// labelled db_name="backoffice"), for the metrics: it reads the pool's statistics and nothing else.
func (s *Store) PoolCollector() prometheus.Collector {
	return collectors.NewDBStatsCollector(s.db, "backoffice")
}

// trailLog is the audit trail (package auditlog), embedded in the Store: its methods are the
// store's.
type trailLog = auditlog.Log

// Trail is the store's audit trail.
func (s *Store) Trail() *auditlog.Log { return s.trailLog }
