package auditlog

import (
	"context"
	"fmt"
	"testing"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// BenchmarkReadBackTree is the tree's read-back of a group (readBackTree, its checks included) on
// SQLite, a group of 1 and of 32 grown onto a tree of 1,000 leaves, beside one statement doing the
// same reads without the checks: the group's range and the edge's ids joined by OR, ordered by
// id, the edge padded to 64 ids.
//
//	go test ./internal/auditlog -run '^$' -bench ReadBackTree
func BenchmarkReadBackTree(b *testing.B) {
	ctx := context.Background()
	events := func(from, n int) []domain.AuditEvent {
		out := make([]domain.AuditEvent, n)
		for i := range out {
			out[i] = domain.AuditEvent{ID: domain.NewID(), At: time.Unix(1700000000, 0), ActorUserID: domain.SystemActorID,
				Action: "principal.decrypt", TargetID: fmt.Sprint("p", from+i), Outcome: domain.OutcomeGranted, Seq: int64(from + i + 1), ChainKeyID: "k1"}
		}
		return out
	}
	tags := func(n int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = make([]byte, 32)
		}
		return out
	}
	const leaves = 1000
	for _, n := range []int{1, 32} {
		d := openTestDB(b, "tree.db")
		first, edge, err := growTree(0, nil, tags(leaves), events(0, leaves))
		if err != nil {
			b.Fatal(err)
		}
		group, _, err := growTree(leaves, edge, tags(n), events(leaves, n))
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Tx(ctx, func(q *sqltx.Tx) error {
			if err := insertTree(ctx, q, false, nil, first); err != nil {
				return err
			}
			return insertTree(ctx, q, false, nil, group)
		}); err != nil {
			b.Fatal(err)
		}
		if err := d.Prepare(ctx, orderedTreeReadBack); err != nil {
			b.Fatal(err)
		}
		for _, text := range treeReadBacks {
			if err := d.Prepare(ctx, text); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("group=%d/readBackTree", n), func(b *testing.B) {
			err := d.Tx(ctx, func(q *sqltx.Tx) error {
				for b.Loop() {
					if err := readBackTree(ctx, q, group, edge); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
		b.Run(fmt.Sprintf("group=%d/ordered-or", n), func(b *testing.B) {
			last := group.first + int64(len(group.hashes)) - 1
			err := d.Tx(ctx, func(q *sqltx.Tx) error {
				for b.Loop() {
					args := []any{group.first, last}
					for x := range edge {
						args = append(args, x)
					}
					for len(args) < 2+maxEdge {
						args = append(args, int64(-1))
					}
					st, err := q.Cached(ctx, orderedTreeReadBack)
					if err != nil {
						return err
					}
					rs, err := st.QueryContext(ctx, args...)
					if err != nil {
						return err
					}
					var v [3]any
					for rs.Next() {
						if err := rs.Scan(&v[0], &v[1], &v[2]); err != nil {
							return err
						}
					}
					if err := rs.Err(); err != nil {
						return err
					}
					rs.Close()
					st.Close()
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

// orderedTreeReadBack reads what treeReadBacks do, in one statement joined by OR and ordered.
var orderedTreeReadBack = `SELECT id, hash, subject_tag FROM audit_tree WHERE id >= ? AND id <= ? OR id IN (` + placeholders(maxEdge) + `) ORDER BY id`
