package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"backoffice/internal/domain"
)

const (
	purgePartner  = "00000000-0000-4000-8000-000000000001"
	purgeMerchant = "00000000-0000-4000-8000-000000000501"
	purgeDocument = "00000000-0000-4000-8000-000000000601"
)

// openPurgeStore is a migrated SQLite store holding one document with content.
func openPurgeStore(t *testing.T, content []byte) (*Store, string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "purge.db")
	s, err := Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []struct {
		q    string
		args []any
	}{
		{`INSERT INTO partners (id, name) VALUES (?, ?)`, []any{purgePartner, "p"}},
		{`INSERT INTO merchants (id, partner_id, name) VALUES (?, ?, ?)`, []any{purgeMerchant, purgePartner, "m"}},
		{`INSERT INTO merchant_documents (id, merchant_id, file_name, content_type, content) VALUES (?, ?, ?, ?, ?)`,
			[]any{purgeDocument, purgeMerchant, "f.pdf", "application/pdf", content}},
	} {
		if _, err := s.db.ExecContext(ctx, stmt.q, stmt.args...); err != nil {
			t.Fatal(err)
		}
	}
	return s, dir
}

// A database file removed or replaced under an open store: writes fail as unavailable (never a
// success lost in a deleted file), no connection makes a new empty file, and the write probe of
// /readyz fails.
func TestWritesRefusedOnceTheFileIsGone(t *testing.T) {
	ctx := context.Background()
	s, dir := openPurgeStore(t, []byte("content"))
	path := filepath.Join(dir, "purge.db")
	if err := s.Writable(ctx); err != nil {
		t.Fatalf("write probe on a healthy file: %v", err)
	}
	for _, replace := range []bool{false, true} {
		os.Remove(path)
		if replace {
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		event := domain.AuditEvent{ActorUserID: purgeMerchant, Action: "merchant_document.delete", TargetID: purgeDocument}
		if err := s.DeleteMerchantDocument(ctx, domain.Scope{}, purgeMerchant, purgeDocument, event); !errors.Is(err, ErrUnavailable) {
			t.Errorf("replaced=%v: delete: %v, want ErrUnavailable", replace, err)
		}
		if _, err := s.pool.Exec(ctx, `INSERT INTO partners (id, name) VALUES (?, ?)`, "00000000-0000-4000-8000-000000000002", "q"); !errors.Is(err, ErrUnavailable) {
			t.Errorf("replaced=%v: insert: %v, want ErrUnavailable", replace, err)
		}
		if err := s.Writable(ctx); err == nil {
			t.Errorf("replaced=%v: write probe passed", replace)
		}
	}
	// New connections do not create a file where there is none.
	os.Remove(path)
	s.db.SetMaxIdleConns(0)
	_ = s.Ping(ctx)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a connection created %s again: %v", path, err)
	}
}

// A read-only database file fails the write probe.
func TestWriteProbeOnReadOnlyFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes to read-only files")
	}
	ctx := context.Background()
	s, dir := openPurgeStore(t, []byte("content"))
	s.Close()
	path := filepath.Join(dir, "purge.db")
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(ctx, "sqlite:"+path, MustExist())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.Writable(ctx); err == nil {
		t.Fatal("write probe passed on a read-only file")
	}
}
