// Package postgres is the engine of the store for scale: how to reach PostgreSQL, its migrations,
// its placeholders, its locks and what its error codes mean. The store's queries are shared with
// SQLite and live in the store package.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	neturl "net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"backoffice/internal/sqltx"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

//go:embed migrations/*.sql
var migrations embed.FS

// defaultConnectTimeout bounds one connection attempt when the URL sets no connect_timeout, so
// that an unreachable server fails a start or a request in seconds instead of hanging on TCP.
const defaultConnectTimeout = 5 * time.Second

// The advisory locks that serialize migrations and imports. Advisory locks are scoped to one
// database, so the constants only have to be distinct within ours.
const (
	migrationLockKey int64 = 0x6261636b6f666663 // "backoffc"
	importLockKey    int64 = 0x6261636b6f666669 // "backoffi"
)

// Open connects through pgx's database/sql driver, so that every shared query of the store runs on
// it unchanged, and checks that the server answers.
func Open(ctx context.Context, url string) (*sql.DB, *Engine, error) {
	cfg, ownMode, err := Config(url)
	if err != nil {
		return nil, nil, err
	}
	db := stdlib.OpenDB(*cfg)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, nil, unreachable(cfg, err)
	}
	return db, &Engine{typedArgs: !ownMode}, nil
}

// Config is how the store connects to url: pgx's settings from it, a connect timeout where it
// names none, and each statement sent as QueryExecMode says unless the URL chooses its own
// default_query_exec_mode (ownMode). The load benchmark's durable limit connects by it too, so
// that it sends its statements as the service does.
func Config(url string) (cfg *pgx.ConnConfig, ownMode bool, err error) {
	cfg, err = pgx.ParseConfig(url)
	if err != nil {
		// pgx's parse errors mask the password.
		return nil, false, fmt.Errorf("postgres: %w", err)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = defaultConnectTimeout
	}
	ownMode = setsExecMode(url)
	if !ownMode {
		cfg.DefaultQueryExecMode = QueryExecMode
	}
	return cfg, ownMode, nil
}

// QueryExecMode is how the store has pgx send each statement unless the URL says otherwise
// (default_query_exec_mode): its text and its arguments in one message, parsed and planned by the
// server each time, in one round trip. pgx's own default prepares each statement once per
// connection, and a transaction-mode pooler (PgBouncer, RDS Proxy, pgcat, Supavisor) gives each
// transaction whichever server connection is free, on which the statement is unknown, or already
// prepared by another client. Sending the text each time needs nothing of the session, so the
// store runs behind such a pooler with no parameter of its own; it costs the server a parse and a
// plan per statement (measured in docs/scale.md).
const QueryExecMode = pgx.QueryExecModeExec

// setsExecMode tells a URL that chooses its own default_query_exec_mode (cache_statement, for a
// direct connection, saves the parse and plan).
func setsExecMode(url string) bool {
	u, err := neturl.Parse(url)
	return err == nil && u.Query().Has("default_query_exec_mode")
}

// unreachable says in one line which server did not answer, without the password.
func unreachable(cfg *pgx.ConnConfig, err error) error {
	return fmt.Errorf("postgres: cannot reach database %q at %s:%d (check BACKOFFICE_DATABASE_URL and that the server is up): %w",
		cfg.Database, cfg.Host, cfg.Port, flatError{err})
}

// flatError keeps a multi-line driver error (pgx puts each host tried on its own line) on one
// line, as a start-up error must be, and keeps it in the chain for errors.Is/As.
type flatError struct{ err error }

func (e flatError) Error() string { return strings.Join(strings.Fields(e.err.Error()), " ") }
func (e flatError) Unwrap() error { return e.err }

// Engine is PostgreSQL's side of the store.
type Engine struct {
	// rebound keeps each query text's rewrite: the texts are the store's own constants, so it
	// stays small.
	rebound sync.Map
	// typedArgs: TypedArgs asks for the arguments' binary form (not when the URL chose its own
	// default_query_exec_mode, which is then the mode of every statement).
	typedArgs bool
}

func (*Engine) Name() string { return "postgres" }

func (*Engine) Migrations() fs.FS {
	sub, _ := fs.Sub(migrations, "migrations")
	return sub
}

// Rebind rewrites the shared "?" placeholders to PostgreSQL's $1, $2, …
func (e *Engine) Rebind(query string) string {
	if v, ok := e.rebound.Load(query); ok {
		return v.(string)
	}
	out := dollarPlaceholders(query)
	e.rebound.Store(query, out)
	return out
}

// dollarPlaceholders numbers the "?" placeholders, leaving string literals, quoted identifiers
// and comments alone.
func dollarPlaceholders(query string) string {
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'' || c == '"':
			end := strings.IndexByte(query[i+1:], c)
			if end < 0 {
				end = len(query) - i - 1
			}
			b.WriteString(query[i : i+end+2])
			i += end + 1
		case c == '-' && i+1 < len(query) && query[i+1] == '-':
			end := strings.IndexByte(query[i:], '\n')
			if end < 0 {
				end = len(query) - i
			}
			b.WriteString(query[i : i+end])
			i += end - 1
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// IsUniqueViolation tells a unique or primary-key violation by its SQLSTATE.
func (*Engine) IsUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// IsConnectionLost tells the server's and pgx's connection-level failures: a failed connect
// (refused, timed out, database not accepting connections), a connection found closed when a
// statement was about to use it, the connection exception class 08, and the server shutting
// down or terminating our backend (57P01–57P03).
func (*Engine) IsConnectionLost(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || pgconn.Timeout(err) || errors.Is(err, pgconn.ErrConnClosed) {
		return true
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
}

// IsBusy tells a lock not granted within its lock_timeout (55P03): the audit chain's turn, which
// audit_chain_head waits for at most BusyTimeout (migration 0017). Other row locks are waited
// for without a timeout of ours.
func (*Engine) IsBusy(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03"
}

// TypedArgs has pgx send a statement's arguments in their types' binary form: it puts
// QueryExecModeCacheDescribe first, which asks the server for the statement's parameter types once
// per connection (an unnamed statement, nothing kept on the server, so a transaction-mode pooler
// serves it as any other) and then binds each argument as its type reads it. In QueryExecMode
// (exec) every argument goes as text: the audit writer's group as text arrays, every element
// quoted by the service and parsed back by the server (docs/performance.md measures it). A URL
// that chose its own mode keeps it.
func (e *Engine) TypedArgs(args []any) []any {
	if !e.typedArgs {
		return args
	}
	return append([]any{pgx.QueryExecModeCacheDescribe}, args...)
}

// IsChainMoved tells audit_chain_append_read's refusal (ZC001, migrations 0018 and 0019): the chain's head was
// no longer the one the events were linked after, and nothing was written.
func (*Engine) IsChainMoved(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "ZC001"
}

// NotLanded tells audit_chain_append_read's refusal (ZC002, migration 0019): the group did not
// read back as it was written, and nothing was committed. Its detail holds the rows it read back.
func (*Engine) NotLanded(err error) (string, bool) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "ZC002" {
		return pe.Detail, true
	}
	return "", false
}

// IsUnwritable tells a server that takes no write now: out of disk, memory or connections (class
// 53), in a read-only transaction (25006: a standby, such as a primary that a failover demoted),
// or failing its own disk (58030).
func (*Engine) IsUnwritable(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	return strings.HasPrefix(pe.Code, "53") || pe.Code == "25006" || pe.Code == "58030"
}

// LockMigrations takes a transaction-level advisory lock in tx, so that replicas starting
// together apply each migration one after the other: the first applies it, the others find it
// applied. The lock ends with the transaction (a session-level lock would stay with whichever
// server connection a pooler gave the session), so a crashed migrator cannot wedge the others.
func (*Engine) LockMigrations(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockKey); err != nil {
		return fmt.Errorf("postgres: migration lock: %w", err)
	}
	return nil
}

// BeginImport takes a transaction-level advisory lock, held until the import commits or rolls
// back whatever happens to the process: two imports counting logs into the same entity's SAM log
// buckets at once would lose counts.
//
// It then tells the read cache's triggers that the transaction is an import
// (backoffice.import, a setting of the transaction: nothing stays on the connection), so that
// they move the generation as it commits rather than as it writes (migrations 0013, 0022):
// moving it takes its row lock to the end of the transaction, and an import's first write comes
// long before its commit. Moved moves it now, and so takes that lock: the store calls it before
// the import first takes the audit chain's head, to take the two in every writer's order.
func (*Engine) BeginImport(ctx context.Context, tx *sql.Tx) (sqltx.Import, error) {
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, importLockKey); err != nil {
		return nil, fmt.Errorf("postgres: import lock: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `SELECT set_config('backoffice.import', 'on', true)`); err != nil {
		return nil, fmt.Errorf("postgres: import setting: %w", err)
	}
	return importSetting{ctx: ctx, tx: tx}, nil
}

// importSetting is an import under way in tx: its setting ends with the transaction.
type importSetting struct {
	ctx context.Context
	tx  *sql.Tx
}

func (i importSetting) Moved() error {
	if _, err := i.tx.ExecContext(i.ctx, `UPDATE cache_generation SET n = (random() * 9007199254740991)::bigint WHERE id = 1`); err != nil {
		return fmt.Errorf("postgres: import: cache generation: %w", err)
	}
	return nil
}

func (importSetting) End() {}

// Catalog lists every table of the current schema with its columns in order: the table, the
// column, whether it is a boolean, its place in the primary key (0 when none; indkey counts from
// 0, the place from 1).
func (*Engine) Catalog() string {
	return `SELECT c.relname, a.attname, a.atttypid = 'boolean'::regtype,
  COALESCE(array_position(i.indkey::int2[], a.attnum) - array_lower(i.indkey::int2[], 1) + 1, 0)
FROM pg_class AS c
JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_index AS i ON i.indrelid = c.oid AND i.indisprimary
WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
ORDER BY c.relname, a.attnum`
}

// InsertOrSkip is the standard INSERT … ON CONFLICT DO NOTHING.
func (*Engine) InsertOrSkip() (head, tail string) { return "INSERT INTO", " ON CONFLICT DO NOTHING" }

// SnapshotIsolation: REPEATABLE READ sees one state for the whole transaction.
func (*Engine) SnapshotIsolation() sql.IsolationLevel { return sql.LevelRepeatableRead }

// KeepsStatements is false: a transaction-mode pooler may stand between the store and the
// server (see QueryExecMode).
func (*Engine) KeepsStatements() bool { return false }

func (*Engine) PromptReads() bool { return false }

// SingleWriter: PostgreSQL runs writers side by side.
func (*Engine) SingleWriter() bool { return false }

// ArrayArgs: PostgreSQL takes a column of values as one array (unnest), so a group's audit rows
// go in one statement.
func (*Engine) ArrayArgs() bool { return true }

// AppendsAfterTip: the migrations make audit_chain_append, which appends a group in one
// statement after a head the caller knows.
func (*Engine) AppendsAfterTip() bool { return true }

// DeferredTrailChecks: the migrations' checks of the audit tables are constraint triggers
// deferred to the commit.
func (*Engine) DeferredTrailChecks() bool { return true }

// FailedStatementEndsTx: after a failed statement, PostgreSQL refuses every other one of its
// transaction until it is rolled back.
func (*Engine) FailedStatementEndsTx() bool { return true }

// SchemaVersion is "": PostgreSQL numbers no change of its schema; an append checks the audit
// trail's table and its writer's function instead.
func (*Engine) SchemaVersion() string { return "" }

// DBSystem is PostgreSQL's name in OpenTelemetry's semantic conventions.
func (*Engine) DBSystem() string { return "postgresql" }

// BusyTimeout is how long an appender waits for the audit chain's turn (audit_chain_head's
// lock_timeout, migration 0017), as long as SQLite's writers wait for its write lock.
func (*Engine) BusyTimeout() time.Duration { return 10 * time.Second }

// PurgeDeleted has nothing to do: deleted rows are PostgreSQL's to vacuum.
func (*Engine) PurgeDeleted(context.Context, *sql.DB) {}

// BeforeWrite has nothing to check: the server owns its files.
func (*Engine) BeforeWrite() error { return nil }

// Room cannot see the server's disks: WriteProbe tries them.
func (*Engine) Room() error { return nil }

// WriteProbe makes a temporary table in the database's default tablespace, where the service's
// tables are (temp_tablespaces set aside), and writes enough rows to it to need new pages, which
// the server allocates on disk as it extends a table: on a full disk that fails as an insert into
// audit_events would. A standby or a read-only transaction refuses the CREATE. It is rolled
// back: nothing stays, and it takes no lock that another session holds (a TRUNCATE of a table
// would wait for a pg_dump's lock for the whole dump).
// It writes its own rows, not row.
func (*Engine) WriteProbe(row []byte) ([]sqltx.Statement, bool) {
	return []sqltx.Statement{
		{SQL: `SET LOCAL temp_tablespaces = ''`},
		{SQL: `CREATE TEMPORARY TABLE readiness_extend (n bigint) ON COMMIT DROP`},
		{SQL: `INSERT INTO readiness_extend SELECT generate_series(1, 2000)`},
	}, false
}

// Close has nothing running to stop.
func (*Engine) Close() {}
