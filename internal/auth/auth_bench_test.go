package auth_test

import (
	"context"
	"fmt"
	"testing"

	"backoffice/internal/auth"
	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/testdb"
)

// BenchmarkAuthenticate is the lookup every request makes: parse, hash, one indexed query (on
// SQLite, among 1,000 keys).
func BenchmarkAuthenticate(b *testing.B) {
	st := testdb.Open(b, "sqlite")
	user := domain.ID("00000000-0000-4000-8000-000000000001")
	ds := &dataset.Dataset{Users: []domain.User{{ID: user, Email: "u@example.com", Permissions: []domain.Permission{domain.PermAll}}}}
	for i := range 1000 {
		ds.APIKeys = append(ds.APIKeys, domain.APIKey{ID: domain.ID(fmt.Sprintf("00000000-0000-4000-9000-%012d", i)), UserID: user,
			Key: fmt.Sprintf("benchmark-key-%06d-xxxxxxxx", i)})
	}
	if _, err := dataset.Import(context.Background(), st, ds, nil); err != nil {
		b.Fatal(err)
	}
	a := auth.New(st, nil)
	ctx := context.Background()
	for _, c := range []struct {
		name, header string
		ok           bool
	}{{"known", "Api-Key benchmark-key-000500-xxxxxxxx", true}, {"unknown", "Api-Key not-a-key-at-all-0000000", false}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := a.Verify(ctx, auth.NewAttempt(c.header)); (err == nil) != c.ok {
					b.Fatal(err)
				}
			}
		})
	}
}
