package postgres

import (
	"context"
	"os"
	"strings"
	"testing"
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
		db, _, err := Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		err = db.QueryRowContext(context.Background(), "SHOW plan_cache_mode").Scan(&got)
		db.Close()
		if err != nil || got != want {
			t.Errorf("plan_cache_mode with %s = %q, %v; want %q", url, got, err, want)
		}
	}
}
