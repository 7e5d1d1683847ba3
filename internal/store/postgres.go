package store

import (
	"context"
	"errors"
)

// openPostgres is completed by the PostgreSQL store work.
func openPostgres(ctx context.Context, url string) (*Store, error) {
	return nil, errors.New("store: postgres: not built yet")
}
