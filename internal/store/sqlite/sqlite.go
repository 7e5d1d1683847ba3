// Package sqlite is the embedded engine of the store: how to open a SQLite file, its migrations,
// and what its error codes mean. The store's queries are shared with PostgreSQL and live in the
// store package.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"time"

	"backoffice/internal/sqltx"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Open opens the SQLite file at path and checks that it answers; create makes the file first
// when there is none (empty and 0600: serve and import), otherwise a missing file is an error
// naming it. WAL lets readers run beside the one writer; the busy timeout makes writers of other
// processes queue instead of failing; secure_delete overwrites deleted content (a deleted
// merchant document must not linger in free pages); synchronous=FULL syncs the WAL on every commit,
// so what a commit acknowledged (an audit event before the SSN it records leaves, a push record
// before the gateway call) survives a power loss, not only a crash; immediate transactions take the write lock
// up front, so two writers never deadlock upgrading a read lock. mode=rw: no connection ever
// creates the file, so a file removed under a running server is not replaced by an empty one.
func Open(ctx context.Context, path string, create bool) (*sql.DB, Engine, error) {
	if path == "" {
		return nil, Engine{}, errors.New("sqlite: empty path")
	}
	if create {
		if err := createFile(path); err != nil {
			return nil, Engine{}, err
		}
	}
	file, err := statDBFile(path)
	if err != nil {
		return nil, Engine{}, err
	}
	dsn := dataSource(path, busyTimeout)
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, Engine{}, fmt.Errorf("sqlite: %w", err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, Engine{}, openError(path, err)
	}
	return db, Engine{file: file, purger: newWALPurger()}, nil
}

// openError names the file and, where SQLite could not write to it (on a full disk it cannot grow
// the WAL's index and says only "disk I/O error"), what to look at.
func openError(path string, err error) error {
	if (Engine{}).IsUnwritable(err) {
		return fmt.Errorf("sqlite: open %s: %w (is its disk full, or the file or its folder read-only?)", path, err)
	}
	return fmt.Errorf("sqlite: open %s: %w", path, err)
}

// dataSource names the database file with the connection settings above and a busy timeout (ms).
func dataSource(path string, busy int) string {
	q := url.Values{}
	for _, p := range []string{"foreign_keys(1)", "journal_mode(WAL)", fmt.Sprintf("busy_timeout(%d)", busy), "secure_delete(1)", "synchronous(FULL)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	q.Set("mode", "rw")
	return "file:" + path + "?" + q.Encode()
}

// Engine is SQLite's side of the store: the file it opened, and the purger of deleted bytes.
type Engine struct {
	file   *dbFile
	purger *walPurger
}

func (Engine) Name() string { return "sqlite" }

func (Engine) Migrations() fs.FS {
	sub, _ := fs.Sub(migrations, "migrations")
	return sub
}

// Rebind leaves the shared "?" placeholders as they are: they are SQLite's own.
func (Engine) Rebind(query string) string { return query }

// IsUniqueViolation tells a unique or primary-key violation by its extended result code.
func (Engine) IsUniqueViolation(err error) bool {
	c, ok := resultCode(err)
	return ok && (c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || c == sqlite3.SQLITE_CONSTRAINT_UNIQUE)
}

// resultCode is the extended result code of a SQLite error; its low byte is the primary code.
func resultCode(err error) (int, bool) {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return 0, false
	}
	return se.Code(), true
}

// IsConnectionLost is never true: a connection is an open file, which no busy or locked
// database takes away.
func (Engine) IsConnectionLost(error) bool { return false }

// IsBusy tells a database that stayed locked past the busy timeout (another process held the
// write lock): a transient state of the database, to be answered "try again", not a fault of
// ours.
func (Engine) IsBusy(err error) bool {
	c, ok := resultCode(err)
	primary := c & 0xff
	return ok && (primary == sqlite3.SQLITE_BUSY || primary == sqlite3.SQLITE_LOCKED)
}

// IsChainMoved is false: SQLite appends to the audit chain in a transaction that holds the write
// lock from its start, and never after a head it was given.
func (Engine) IsChainMoved(error) bool { return false }

// NotLanded is false: SQLite has no one-statement append, and reads back in Go (readBack).
func (Engine) NotLanded(error) (string, bool) { return "", false }

// TypedArgs: SQLite binds each value as it is.
func (Engine) TypedArgs(args []any) []any { return args }

// IsUnwritable tells a file that takes no write now: the disk (or max_page_count) is full, the
// file or its folder is read-only, the operating system failed a read or a write, a file that
// SQLite needs (the WAL, its index) cannot be opened, or the path no longer names the file that
// was opened (removed or replaced). Each lasts until someone frees space, fixes permissions, the
// disk or the file; the database is as it was before the failed write.
func (Engine) IsUnwritable(err error) bool {
	if errors.Is(err, errFileReplaced) || errors.Is(err, errNoRoom) {
		return true
	}
	c, ok := resultCode(err)
	if !ok {
		return false
	}
	switch c & 0xff {
	case sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN:
		return true
	}
	return false
}

// LockMigrations needs no lock of its own: each migration's transaction takes SQLite's write
// lock, and a migration already applied by another process is found recorded.
func (Engine) LockMigrations(context.Context, *sql.Tx) error { return nil }

// BeginImport gives the import's connection a page cache of 32 MiB instead of the default 2 MiB:
// the logs' ids go into their index a chunk at a time, in id order within the chunk, and the small
// cache misses on nearly every one. A bigger one was no faster (the misses left are reads from the
// operating system's cache) and is the import's memory, which it would soon be most of
// (docs/performance.md). Imports need no lock of their own: SQLite's
// write transactions already run one at a time.
//
// It also sets the read cache's generation triggers aside for the import's rows (see
// cacheTriggers); Moved puts them back and moves the generation once, before the import
// commits (were it called earlier, the triggers would be back for what the import writes after).
// End gives the page cache back, whatever the outcome.
func (Engine) BeginImport(ctx context.Context, tx *sql.Tx) (sqltx.Import, error) {
	if _, err := tx.ExecContext(ctx, "PRAGMA cache_size = -32768"); err != nil {
		return nil, fmt.Errorf("sqlite: import settings: %w", err)
	}
	imp := &importSettings{ctx: ctx, tx: tx}
	triggers, err := dropCacheTriggers(ctx, tx)
	if err != nil {
		imp.End()
		return nil, err
	}
	imp.triggers = triggers
	return imp, nil
}

// importSettings is an import under way in tx, with the triggers it set aside.
type importSettings struct {
	ctx      context.Context
	tx       *sql.Tx
	triggers []trigger
}

// Moved puts the triggers back, moving the generation once.
func (i *importSettings) Moved() error {
	err := restoreCacheTriggers(i.ctx, i.tx, i.triggers)
	i.triggers = nil
	return err
}

// End gives the page cache back.
func (i *importSettings) End() { _, _ = i.tx.ExecContext(i.ctx, "PRAGMA cache_size = -2000") }

// cacheTriggers are the row triggers that move the read cache's generation (migration 0010):
// SQLite has no statement triggers, so a million imported logs would move it two million times,
// each a random() and an UPDATE, a large part of the import's time (measured in
// docs/performance.md, "The read cache's parts"). The import drops them in its own transaction and creates them
// again, from their own text, before it commits: DDL is transactional in SQLite and the import
// holds the write lock from its BEGIN (immediate, as every write transaction of the store's), so
// no other connection ever sees a table without its trigger (it sees the old schema until the
// commit) nor writes while they are aside, and an import that fails or is killed rolls the drop
// back with everything else. The schema's version moves with the commit, so every connection
// prepares its statements again once, on its next use (SQLite does so by itself).
const cacheTriggers = `SELECT name, sql FROM sqlite_master WHERE type = 'trigger'
  AND (name GLOB '*_cache_insert' OR name GLOB '*_cache_update' OR name GLOB '*_cache_delete')
  ORDER BY name`

type trigger struct{ name, sql string }

func dropCacheTriggers(ctx context.Context, tx *sql.Tx) ([]trigger, error) {
	rows, err := tx.QueryContext(ctx, cacheTriggers)
	if err != nil {
		return nil, fmt.Errorf("sqlite: import: cache triggers: %w", err)
	}
	var triggers []trigger
	for rows.Next() {
		var t trigger
		if err := rows.Scan(&t.name, &t.sql); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlite: import: cache triggers: %w", err)
		}
		triggers = append(triggers, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: import: cache triggers: %w", err)
	}
	for _, t := range triggers {
		if _, err := tx.ExecContext(ctx, `DROP TRIGGER "`+t.name+`"`); err != nil {
			return nil, fmt.Errorf("sqlite: import: drop trigger %s: %w", t.name, err)
		}
	}
	return triggers, nil
}

// restoreCacheTriggers creates the triggers again and moves the generation for everything the
// import wrote, in the import's transaction.
func restoreCacheTriggers(ctx context.Context, tx *sql.Tx, triggers []trigger) error {
	for _, t := range triggers {
		if _, err := tx.ExecContext(ctx, t.sql); err != nil {
			return fmt.Errorf("sqlite: import: create trigger %s: %w", t.name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE cache_generation SET n = random()`); err != nil {
		return fmt.Errorf("sqlite: import: cache generation: %w", err)
	}
	return nil
}

// Catalog lists every table (but SQLite's own) with its columns in order: the table, the
// column, whether it is a boolean (never: SQLite keeps flags as 0 and 1), its place in the
// primary key (0 when none).
func (Engine) Catalog() string {
	return `SELECT m.name, c.name, 0, c.pk
FROM sqlite_master AS m, pragma_table_info(m.name) AS c
WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\_%' ESCAPE '\'
ORDER BY m.name, c.cid`
}

// InsertOrSkip is INSERT OR IGNORE: a multi-row insert that cannot abort half-way needs no
// statement journal, where ON CONFLICT DO NOTHING still aborts on other constraints and so makes
// SQLite journal every batch.
func (Engine) InsertOrSkip() (head, tail string) { return "INSERT OR IGNORE INTO", "" }

// SnapshotIsolation: in WAL mode a plain deferred read transaction keeps its snapshot.
func (Engine) SnapshotIsolation() sql.IsolationLevel { return sql.LevelDefault }

// KeepsStatements: a connection of SQLite's is the database file opened in this process; a
// statement prepared on it stays until it is closed.
func (Engine) KeepsStatements() bool { return true }

func (Engine) PromptReads() bool { return true }

// SingleWriter: SQLite lets one writer in at a time and makes the others poll with sleeps of a
// millisecond and more; queueing this process's writers in Go instead takes most of a write's
// latency away under load.
func (Engine) SingleWriter() bool { return true }

// ArrayArgs is false: SQLite has no array type; the audit rows go in as rows of values.
func (Engine) ArrayArgs() bool { return false }

// AppendsAfterTip is false: the migrations make no function to append with; SQLite's single
// writer appends after the head it reads in the same transaction.
func (Engine) AppendsAfterTip() bool { return false }

// DeferredTrailChecks is false: SQLite's triggers run with their statement.
func (Engine) DeferredTrailChecks() bool { return false }

// FailedStatementEndsTx is false: a statement that fails in a SQLite transaction leaves the
// transaction as it was before the statement.
func (Engine) FailedStatementEndsTx() bool { return false }

// SchemaVersion reads SQLite's schema version, which every change of the schema moves.
func (Engine) SchemaVersion() string { return `PRAGMA schema_version` }

// DBSystem is SQLite's name in OpenTelemetry's semantic conventions.
func (Engine) DBSystem() string { return "sqlite" }

// BusyTimeout is the busy timeout every connection is opened with: how long a writer waits for
// another's write lock, in this process (the store's queue) or another.
func (Engine) BusyTimeout() time.Duration { return busyTimeout * time.Millisecond }

// PurgeDeleted has the WAL truncated in the background and returns at once: secure_delete zeroes
// a deleted row's bytes in its page, but the WAL still holds the pages as they were until a
// checkpoint, and one that truncates waits for readers with the write lock held (see walPurger).
func (e Engine) PurgeDeleted(_ context.Context, db *sql.DB) { e.purger.kick(db) }

// BeforeWrite fails once the path no longer names the file that was opened (removed or
// replaced): SQLite would go on writing into the old file, and every such write would be lost;
// and every read would come from a file nobody else writes, whose cache generation never moves
// again (the store makes this check before each check of its read cache too).
func (e Engine) BeforeWrite() error { return e.file.check() }

// Room fails when the database's filesystem is read-only or has less room than a commit may
// need (see dbFile.room).
func (e Engine) Room() error { return e.file.room() }

// WriteProbe commits a row larger than a page and its deletion: the write lock is taken, new
// pages are found (free ones, or room under max_page_count), and the commit appends its frames to
// the WAL and syncs it, as every request's commit does. A rolled-back write would prove none of the
// last: SQLite writes the WAL only at commit. The table holds no row before or after, and no
// trigger of the read cache's is on it.
func (Engine) WriteProbe(row []byte) ([]sqltx.Statement, bool) {
	return []sqltx.Statement{
		{SQL: `INSERT INTO readiness_probe (filler) VALUES (?)`, Args: []any{row}},
		{SQL: `DELETE FROM readiness_probe`},
	}, true
}

// Close stops the purger, with a last checkpoint if one was due.
func (e Engine) Close() { e.purger.stop() }
