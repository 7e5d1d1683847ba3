package sqlite

import (
	"context"
	"database/sql/driver"
	"testing"
)

// BenchmarkDataVersion measures what a read cache's check would cost: one PRAGMA data_version on a
// connection of its own, through database/sql and through the driver's connection, beside a
// point read of the kind each cached answer would save.
func BenchmarkDataVersion(b *testing.B) {
	ctx := context.Background()
	db, _, err := Open(ctx, b.TempDir()+"/dv.db", true)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE k (h BLOB PRIMARY KEY, u TEXT, p TEXT)`); err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		if _, err := db.ExecContext(ctx, `INSERT INTO k VALUES (?, 'user', 'perm')`, []byte{byte(i), byte(i >> 8), 1, 2, 3}); err != nil {
			b.Fatal(err)
		}
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()

	b.Run("sql.Conn/prepared", func(b *testing.B) {
		st, err := conn.PrepareContext(ctx, "PRAGMA data_version")
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		var v int64
		for b.Loop() {
			if err := st.QueryRowContext(ctx).Scan(&v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sql.Conn/Raw-driver-stmt", func(b *testing.B) {
		err := conn.Raw(func(dc any) error {
			st, err := dc.(driver.ConnPrepareContext).PrepareContext(ctx, "PRAGMA data_version")
			if err != nil {
				return err
			}
			defer st.Close()
			q := st.(driver.StmtQueryContext)
			dest := make([]driver.Value, 1)
			for b.Loop() {
				r, err := q.QueryContext(ctx, nil)
				if err != nil {
					return err
				}
				if err := r.Next(dest); err != nil {
					return err
				}
				r.Close()
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	})
	b.Run("pool/point-read", func(b *testing.B) {
		st, err := db.PrepareContext(ctx, `SELECT u, p FROM k WHERE h = ?`)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		var u, p string
		key := []byte{7, 0, 1, 2, 3}
		for b.Loop() {
			if err := st.QueryRowContext(ctx, key).Scan(&u, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pool/point-read-parallel", func(b *testing.B) {
		st, err := db.PrepareContext(ctx, `SELECT u, p FROM k WHERE h = ?`)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		key := []byte{7, 0, 1, 2, 3}
		b.RunParallel(func(pb *testing.PB) {
			var u, p string
			for pb.Next() {
				if err := st.QueryRowContext(ctx, key).Scan(&u, &p); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
