package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
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

// TestClassify: connection-level errors become ErrUnavailable; statement errors keep their
// meaning.
func TestClassify(t *testing.T) {
	pg := &engine{unavailable: postgresUnavailable}
	lost := []error{
		driver.ErrBadConn,
		fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: "57P01"}),
		&pgconn.PgError{Code: "08006"},
		fmt.Errorf("begin: %w", pgconn.ErrConnClosed),
		context.DeadlineExceeded,
	}
	for _, err := range lost {
		if got := pg.classify(err); !errors.Is(got, ErrUnavailable) || !errors.Is(got, err) {
			t.Errorf("classify(%v) = %v, want ErrUnavailable wrapping it", err, got)
		}
	}
	kept := []error{nil, errNotFound, &pgconn.PgError{Code: "23505"}, errors.New("syntax")}
	for _, err := range kept {
		if got := pg.classify(err); got != err {
			t.Errorf("classify(%v) = %v, want it unchanged", err, got)
		}
	}
}

// The store's connections plan each prepared statement once (see genericPlans); a URL that sets
// plan_cache_mode keeps its own.
func TestGenericPlans(t *testing.T) {
	base := os.Getenv("BACKOFFICE_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("PostgreSQL tests skipped: set BACKOFFICE_TEST_POSTGRES_URL to run them")
	}
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	for url, want := range map[string]string{base: "force_generic_plan", base + sep + "plan_cache_mode=auto": "auto"} {
		st, err := Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		err = st.db.QueryRowContext(context.Background(), "SHOW plan_cache_mode").Scan(&got)
		st.Close()
		if err != nil || got != want {
			t.Errorf("plan_cache_mode with %s = %q, %v; want %q", url, got, err, want)
		}
	}
}
