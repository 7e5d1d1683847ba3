package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// CopyRows loads rows into table by COPY, on conn's pgx connection, inside the transaction open
// on it: values holds the rows one after the other, len(columns) values each.
func (*Engine) CopyRows(ctx context.Context, conn *sql.Conn, table string, columns []string, values []any) error {
	return conn.Raw(func(driverConn any) error {
		c, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("postgres: copy: a %T is no pgx connection", driverConn)
		}
		_, err := c.Conn().CopyFrom(ctx, pgx.Identifier{table}, columns, &flatRows{values: values, width: len(columns), at: -1})
		return err
	})
}

// flatRows hands pgx the rows of a flat slice of values, without a slice per row.
type flatRows struct {
	values []any
	width  int
	at     int // the row Values gives, -1 before the first
}

func (r *flatRows) Next() bool {
	r.at++
	return (r.at+1)*r.width <= len(r.values)
}

func (r *flatRows) Values() ([]any, error) { return r.values[r.at*r.width : (r.at+1)*r.width], nil }
func (r *flatRows) Err() error             { return nil }
