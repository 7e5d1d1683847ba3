package sqlite

import (
	"context"
	"database/sql"
	"testing"
)

// The counter moves on a commit of the pool's connections and of a connection of another
// database handle (another process), and stays put while nothing commits.
func TestChangeCounterSeesOtherConnections(t *testing.T) {
	ctx := context.Background()
	db, e, path := createTemp(t)
	c, err := e.ChangeCounter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	version := func() int64 {
		t.Helper()
		v, err := c.Version(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	v0 := version()
	if v := version(); v != v0 {
		t.Fatalf("the version moved from %d to %d with no commit", v0, v)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	v1 := version()
	if v1 == v0 {
		t.Error("a commit of the pool did not move the version")
	}
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ExecContext(ctx, `INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	if version() == v1 {
		t.Error("a commit of another handle did not move the version")
	}
}
