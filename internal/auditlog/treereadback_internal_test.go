package auditlog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// readBackTree passes a group's rows and edge exactly as stored, and nothing else: a row of the
// group altered, missing or not the group's is ErrNotLanded; an edge row altered or missing is
// ErrTree. Each case is a transaction of its own, rolled back, over one stored tree.
func TestReadBackTreeTakesOnlyWhatWasWritten(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t, "tree.db")
	events := func(from, n int) []domain.AuditEvent {
		var out []domain.AuditEvent
		for i := range n {
			out = append(out, domain.AuditEvent{ID: domain.NewID(), At: time.Unix(1700000000, 0), ActorUserID: domain.SystemActorID,
				Action: "principal.decrypt", TargetID: fmt.Sprint("p", from+i), Outcome: domain.OutcomeGranted, Seq: int64(from + i + 1), ChainKeyID: "k1"})
		}
		return out
	}
	tags := func(n int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = make([]byte, 32)
			out[i][0] = byte(i)
		}
		return out
	}
	// A tree of 21 leaves (its edge: three subtrees), then a group of 11 grown from its edge.
	first, edge, err := growTree(0, nil, tags(21), events(0, 21))
	if err != nil {
		t.Fatal(err)
	}
	group, _, err := growTree(21, edge, tags(11), events(21, 11))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Tx(ctx, func(q *sqltx.Tx) error { return insertTree(ctx, q, false, nil, first) }); err != nil {
		t.Fatal(err)
	}
	var edgeIDs []int64
	for x := range edge {
		edgeIDs = append(edgeIDs, x)
	}
	altered := func(e edgeHashes, x int64) edgeHashes {
		out := edgeHashes{}
		for k, v := range e {
			out[k] = v
		}
		h := out[x]
		h[0] ^= 1
		out[x] = h
		return out
	}
	cases := []struct {
		name  string
		sql   string // run after the group's insert
		edge  edgeHashes
		want  error
		wantN string
	}{
		{name: "as written", edge: edge},
		{name: "a row altered", sql: fmt.Sprintf(`UPDATE audit_tree SET hash = zeroblob(32) WHERE id = %d`, group.first+3), edge: edge, want: ErrNotLanded},
		{name: "a row missing", sql: fmt.Sprintf(`DELETE FROM audit_tree WHERE id = %d`, group.first+int64(len(group.hashes))-1), edge: edge, want: ErrNotLanded, wantN: "missing"},
		{name: "a row's tag altered", sql: fmt.Sprintf(`UPDATE audit_tree SET subject_tag = zeroblob(32) WHERE id = %d`, group.first+1), edge: edge, want: ErrNotLanded},
		{name: "an edge row altered in the database", sql: fmt.Sprintf(`UPDATE audit_tree SET hash = zeroblob(32) WHERE id = %d`, edgeIDs[0]), edge: edge, want: ErrTree},
		{name: "an edge row missing", sql: fmt.Sprintf(`DELETE FROM audit_tree WHERE id = %d`, edgeIDs[1]), edge: edge, want: ErrTree},
		{name: "an edge not the database's", edge: altered(edge, edgeIDs[2]), want: ErrTree},
		{name: "a row of the group read twice", sql: readTwice(group.first + 2), edge: edge, want: ErrNotLanded},
		{name: "an edge row read twice", sql: readTwice(edgeIDs[0]), edge: edge, want: ErrNotLanded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errRollback := errors.New("rolled back")
			err := d.Tx(ctx, func(q *sqltx.Tx) error {
				if err := insertTree(ctx, q, false, nil, group); err != nil {
					return err
				}
				if c.sql != "" {
					if _, err := q.Exec(ctx, c.sql); err != nil {
						return err
					}
				}
				if err := readBackTree(ctx, q, group, c.edge); err != nil {
					return err
				}
				return errRollback
			})
			switch {
			case c.want == nil && !errors.Is(err, errRollback):
				t.Fatalf("read back: %v, want it to pass", err)
			case c.want != nil && !errors.Is(err, c.want):
				t.Fatalf("read back: %v, want %v", err, c.want)
			case c.wantN != "" && !strings.Contains(err.Error(), c.wantN):
				t.Fatalf("read back: %v, want it to say %q", err, c.wantN)
			}
		})
	}
	if n := tlog.StoredHashCount(32) - tlog.StoredHashCount(21); int64(len(group.hashes)) != n {
		t.Fatalf("the group grew %d rows, want %d", len(group.hashes), n)
	}
}

// readTwice puts a view in audit_tree's place that reads the row at id twice: rows that come in
// no order asked for are each placed once.
func readTwice(id int64) string {
	return fmt.Sprintf(`ALTER TABLE audit_tree RENAME TO audit_tree_stored;
		CREATE VIEW audit_tree AS SELECT * FROM audit_tree_stored UNION ALL SELECT * FROM audit_tree_stored WHERE id = %d`, id)
}

// Every edge a tree can have (one to maxEdge rows) gets the smallest read-back that holds it, and
// a statement whose list holds exactly that many ids.
func TestTreeReadBackFitsTheEdge(t *testing.T) {
	for n := 0; n <= maxEdge; n++ {
		text, size := treeReadBack(n)
		if size < max(n, 1) || size >= 2*max(n, 1) {
			t.Fatalf("edge of %d: a read-back of %d ids", n, size)
		}
		if got := strings.Count(text, "?") - 1; got != size { // the first: the group's first id
			t.Fatalf("edge of %d: the statement lists %d ids, not %d", n, got, size)
		}
	}
}

// On a pool of one connection, before the audit writer ever ran, a transaction that records its
// own event (as a credential's or a document's does) and the tree's build do not wait for a second
// connection to prepare the append's statements.
func TestAppendsOnOneConnection(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(ctx context.Context, st *testLog) error
	}{
		{"a transaction's own event", func(ctx context.Context, st *testLog) error {
			chain := st.Chain()
			return st.db.Tx(ctx, func(q *sqltx.Tx) error {
				return chain.Append(ctx, q, []domain.AuditEvent{{ID: domain.NewID(), At: time.Now(), ActorUserID: domain.SystemActorID,
					Action: "document.delete", TargetID: "d", Outcome: domain.OutcomeGranted}})
			})
		}},
		{"the tree's build", func(ctx context.Context, st *testLog) error {
			_, err := st.BuildAuditTree(ctx)
			return err
		}},
		{"a transaction's cached statement prepared nowhere before", func(ctx context.Context, st *testLog) error {
			return st.db.Tx(ctx, func(q *sqltx.Tx) error {
				var n int64
				return q.ReadCachedRow(ctx, `SELECT count(*) FROM audit_events WHERE seq > 0`, nil, []any{&n})
			})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, _ := auditStore(t)
			st.sql.SetMaxOpenConns(1)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := c.run(ctx, st); err != nil {
				t.Fatalf("on one connection: %v", err)
			}
		})
	}
}
