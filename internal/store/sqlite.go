package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"sync"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations/sqlite/*.sql
var sqliteMigrations embed.FS

// openSQLite opens the embedded store. WAL lets readers run beside the one writer; the busy
// timeout makes writers queue instead of failing; secure_delete overwrites deleted content (a
// deleted merchant document must not linger in free pages); immediate transactions take the write
// lock up front, so two writers never deadlock upgrading a read lock.
func openSQLite(ctx context.Context, path string, o options) (*Store, error) {
	if path == "" {
		return nil, errors.New("store: sqlite: empty path")
	}
	q := url.Values{}
	for _, p := range []string{"foreign_keys(1)", "journal_mode(WAL)", "busy_timeout(10000)", "secure_delete(1)", "synchronous(NORMAL)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	dsn := "file:" + path + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: sqlite: %w", err)
	}
	o.pool.apply(db)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: sqlite: open %s: %w", path, err)
	}
	migrations, _ := fs.Sub(sqliteMigrations, "migrations/sqlite")
	// INSERT OR IGNORE: a multi-row insert that cannot abort half-way needs no statement journal;
	// ON CONFLICT DO NOTHING still aborts on other constraints, so SQLite journals every batch.
	//
	// An import may use a page cache of 256 MiB instead of the default 2 MiB: a million random
	// uuid keys do not fit the small one, and every miss is a read. It is given back at the end.
	e := &engine{name: "sqlite", isUniqueViolation: sqliteUnique, unavailable: sqliteBusy, migrations: migrations, insertOrSkip: "INSERT OR IGNORE INTO",
		importTuning: []string{"PRAGMA cache_size = -262144"}, importUntuning: []string{"PRAGMA cache_size = -2000"}}
	// secure_delete zeroes a deleted row's bytes in its page, but the WAL still holds the pages
	// as they were until a checkpoint: truncating it after a deletion takes those copies away.
	e.purge = []string{"PRAGMA wal_checkpoint(TRUNCATE)"}
	st := newStore(db, e)
	st.writes = &sync.Mutex{}
	return st, nil
}

func sqliteUnique(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	c := se.Code()
	return c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || c == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}

// sqliteBusy tells a database that stayed locked past the busy timeout (another process held the
// write lock): a transient state of the database, to be answered "try again", not a fault of ours.
func sqliteBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	primary := se.Code() & 0xff
	return primary == sqlite3.SQLITE_BUSY || primary == sqlite3.SQLITE_LOCKED
}
