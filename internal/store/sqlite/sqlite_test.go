package sqlite

import (
	"context"
	"testing"
)

// The embedded store runs as the team's style asks: WAL, foreign keys enforced, a busy timeout, and
// deleted content overwritten.
func TestSQLiteSettings(t *testing.T) {
	ctx := context.Background()
	db, _, err := Open(ctx, t.TempDir()+"/settings.db", true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := map[string]string{"journal_mode": "wal", "foreign_keys": "1", "busy_timeout": "10000", "secure_delete": "1"}
	for pragma, value := range want {
		var got string
		if err := db.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != value {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, value)
		}
	}
}
