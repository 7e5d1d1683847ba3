package postgres

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestDollarPlaceholders(t *testing.T) {
	cases := map[string]string{
		`SELECT a FROM t WHERE id = ? AND b = ?`:          `SELECT a FROM t WHERE id = $1 AND b = $2`,
		`SELECT '?', "we?rd" FROM t WHERE x = ?`:          `SELECT '?', "we?rd" FROM t WHERE x = $1`,
		"SELECT 1 -- why?\nFROM t WHERE x = ?":            "SELECT 1 -- why?\nFROM t WHERE x = $1",
		`INSERT INTO t VALUES (?, ?), (?, ?)`:             `INSERT INTO t VALUES ($1, $2), ($3, $4)`,
		`SELECT 'it''s ?' WHERE a = ?`:                    `SELECT 'it''s ?' WHERE a = $1`,
		`SELECT COALESCE(MAX(pos), 0) FROM t WHERE e = ?`: `SELECT COALESCE(MAX(pos), 0) FROM t WHERE e = $1`,
	}
	for in, want := range cases {
		if got := dollarPlaceholders(in); got != want {
			t.Errorf("dollarPlaceholders(%q) = %q, want %q", in, got, want)
		}
	}
}

// The store's connections prepare nothing (see QueryExecMode): a statement with arguments leaves
// no prepared statement on the server's session, so a transaction-mode pooler may give the next
// transaction any server connection. A URL that chooses default_query_exec_mode keeps its own
// (cache_statement prepares each statement once per connection).
func TestStatementsLeaveNothingPrepared(t *testing.T) {
	base, sep := testServer(t)
	ctx := context.Background()
	for url, wantSome := range map[string]bool{base: false, base + sep + "default_query_exec_mode=cache_statement": true} {
		db, _, err := Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1) // one session, whose prepared statements pg_prepared_statements shows
		var one, prepared int
		err = db.QueryRowContext(ctx, "SELECT $1::int", 1).Scan(&one)
		if err == nil {
			err = db.QueryRowContext(ctx, "SELECT count(*) FROM pg_prepared_statements").Scan(&prepared)
		}
		db.Close()
		if err != nil || (prepared > 0) != wantSome {
			t.Errorf("prepared statements after a query with %s = %d, %v; want some: %v", url, prepared, err, wantSome)
		}
	}
}

// TypedArgs asks pgx for the arguments' binary form (the audit writer's arrays) unless the URL
// chose its own mode, and, like every statement of the store, leaves nothing prepared on the
// server's session: the parameters' types are asked of an unnamed statement.
func TestTypedArgsBindBinaryAndLeaveNothingPrepared(t *testing.T) {
	base, sep := testServer(t)
	ctx := context.Background()
	for url, wantTyped := range map[string]bool{base: true, base + sep + "default_query_exec_mode=exec": false} {
		db, e, err := Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		ids, hashes := []string{"a,\"b", "{c}"}, [][]byte{{0, 1, 255}, {}}
		args := e.TypedArgs([]any{ids, hashes})
		if typed := len(args) == 3 && args[0] == pgx.QueryExecModeCacheDescribe; typed != wantTyped {
			t.Errorf("%s: TypedArgs = %v, want the binary form asked for: %v", url, args, wantTyped)
		}
		var n, prepared int
		var same bool
		for i := 0; i < 2 && err == nil; i++ { // the second time from the connection's cache of descriptions
			err = db.QueryRowContext(ctx, "SELECT cardinality($1::text[]), $1::text[] = ARRAY['a,\"b', '{c}'] AND $2::bytea[] = ARRAY['\\x0001ff'::bytea, ''::bytea]", args...).Scan(&n, &same)
		}
		if err == nil {
			err = db.QueryRowContext(ctx, "SELECT count(*) FROM pg_prepared_statements").Scan(&prepared)
		}
		db.Close()
		if err != nil || n != 2 || !same || prepared != 0 {
			t.Errorf("%s: %d elements, same values %v, %d prepared statements, %v; want 2, true, 0", url, n, same, prepared, err)
		}
	}
}

// testServer is BACKOFFICE_TEST_POSTGRES_URL (the test is skipped without it) and the separator
// that adds a parameter to it.
func testServer(t *testing.T) (url, sep string) {
	t.Helper()
	url = os.Getenv("BACKOFFICE_TEST_POSTGRES_URL")
	if url == "" {
		t.Skip("PostgreSQL tests skipped: set BACKOFFICE_TEST_POSTGRES_URL to run them")
	}
	if strings.Contains(url, "?") {
		return url, "&"
	}
	return url, "?"
}
