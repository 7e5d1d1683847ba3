package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"backoffice/internal/sqltx"
	"backoffice/internal/store/postgres"
)

// TestClassify: connection-level errors and a server that takes no write (full, a standby)
// become ErrUnavailable; statement errors keep their meaning.
func TestClassify(t *testing.T) {
	db, err := sql.Open("pgx", "postgres://127.0.0.1:1/unused") // never connects
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pg := sqltx.NewDB(db, &postgres.Engine{}, sqltx.Pool{MaxIdle: 10, LostTries: 11})
	lost := []error{
		driver.ErrBadConn,
		fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: "57P01"}),
		&pgconn.PgError{Code: "08006"},
		fmt.Errorf("begin: %w", pgconn.ErrConnClosed),
		context.DeadlineExceeded,
		&pgconn.PgError{Code: "53100"},                           // disk_full
		fmt.Errorf("commit: %w", &pgconn.PgError{Code: "25006"}), // read_only_sql_transaction
		&pgconn.PgError{Code: "58030"},                           // io_error
	}
	for _, err := range lost {
		if got := pg.Classify(err); !errors.Is(got, ErrUnavailable) || !errors.Is(got, err) {
			t.Errorf("classify(%v) = %v, want ErrUnavailable wrapping it", err, got)
		}
	}
	kept := []error{nil, errNotFound, &pgconn.PgError{Code: "23505"}, errors.New("syntax")}
	for _, err := range kept {
		if got := pg.Classify(err); got != err {
			t.Errorf("classify(%v) = %v, want it unchanged", err, got)
		}
	}
}
