package store

import (
	"context"
	"database/sql"
	"io/fs"
	"time"

	"backoffice/internal/auditlog"
	"backoffice/internal/sqltx"
)

// Engine is what differs between the two database engines. internal/store/sqlite and
// internal/store/postgres each provide one; every query of the store is written once, for both.
type Engine interface {
	// auditlog.Engine: what the audit trail asks of the engine it is written to.
	auditlog.Engine
	Name() string
	// Migrations holds the engine's *.sql files, applied in name order.
	Migrations() fs.FS
	// Rebind rewrites the shared "?" placeholders into the engine's own.
	Rebind(query string) string
	// IsUniqueViolation tells a unique or primary-key violation by its error code.
	IsUniqueViolation(err error) bool
	// IsConnectionLost tells the engine's errors of a connection that is gone (the server
	// restarted, the network cut) from errors of the statement.
	IsConnectionLost(err error) bool
	// IsUnwritable tells a database that takes no write until its operator acts (out of space, a
	// read-only file or server, a failing disk): no fault of the service's, so answered like a
	// lost connection (503), and not retried.
	IsUnwritable(err error) bool
	// LockMigrations makes the transaction tx, which applies one migration, wait for those of
	// other processes starting together, until it ends: a lock of the transaction, never of the
	// session, which a transaction-mode pooler does not keep.
	LockMigrations(ctx context.Context, tx *sql.Tx) error
	// BeginImport starts an import in its transaction: the engine's lock and settings for a bulk
	// load, under which the tables' triggers do not move the read cache's generation as the rows
	// go in. Its Moved moves it, and takes its lock. On an engine whose writers run side by side
	// the triggers still move it as the import commits, and Load calls Moved only before the
	// import first takes the audit chain's head (every writer takes the generation first and the
	// chain second); on an engine of one writer at a time the triggers are set aside, and Load
	// calls Moved once the import has written its rows, before it commits. An error fails the
	// import. Its End gives the settings back, whatever the outcome.
	BeginImport(ctx context.Context, tx *sql.Tx) (sqltx.Import, error)
	// InsertOrSkip spells an INSERT that skips rows whose unique key is taken: head before the
	// table, tail after the values.
	InsertOrSkip() (head, tail string)
	// Catalog is the query that lists the database's tables and columns, for a copy (see
	// bulkload.Catalog).
	Catalog() string
	// SnapshotIsolation is the level at which a read-only transaction sees one state.
	SnapshotIsolation() sql.IsolationLevel
	// KeepsStatements tells an engine on whose connections a statement prepared once may be run
	// again in later transactions (SQLite). PostgreSQL's may not: a transaction-mode pooler in
	// front of the server gives each transaction whichever server connection is free, so there
	// the store prepares nothing and sends each statement's text (see postgres.QueryExecMode).
	KeepsStatements() bool
	// DBSystem is the engine's name in OpenTelemetry's semantic conventions (db.system.name).
	DBSystem() string
	// PromptReads tells an engine whose point reads wait on nothing but the local disk and, at
	// worst, the busy timeout (SQLite in WAL mode), never on a network: the read cache's freshness
	// check runs there without the request's cancellation, which database/sql and the driver would
	// each watch with a goroutine of their own, costing more than the read.
	PromptReads() bool
	// BusyTimeout is how long a writer waits for a lock another writer holds before it fails
	// busy (SQLite's busy timeout; on PostgreSQL, the wait for the audit chain's turn).
	BusyTimeout() time.Duration
	// PurgeDeleted has copies of deleted bytes the engine still keeps dropped, best effort; it
	// returns at once (SQLite's checkpoint runs in the background, never on a request).
	PurgeDeleted(ctx context.Context, db *sql.DB)
	// BeforeWrite fails when a write would be lost, or a read would come from a database nobody
	// writes any more (SQLite: the file opened is no longer at its path); the store answers that
	// as unavailable. It is made before every write and every check of the read cache.
	BeforeWrite() error
	// Room fails when the storage a write would need is short, as far as this process can see:
	// SQLite's filesystem read-only or nearly full (a commit's WAL frames need room). PostgreSQL's
	// disks are the server's: nil there, its WriteProbe tries them.
	Room() error
	// WriteProbe is the write GET /readyz makes to prove that the database takes, now, the writes a
	// request makes (a decrypt's audit event, a push's record): statements run in order in one
	// write transaction, each with its own arguments (row, the store's probe row, where one is
	// written), and whether the transaction is committed (else it is rolled back).
	WriteProbe(row []byte) (statements []sqltx.Statement, commit bool)
	// Close stops what the engine runs in the background.
	Close()
}
