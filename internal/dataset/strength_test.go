package dataset_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"backoffice/internal/auth"
	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// An import whose file holds one guessable credential among good records is refused whole,
// naming that record, on either engine: nothing of it is imported, and its other keys do
// not authenticate. A 43-character random base64url key is imported and works.
func TestImportRefusesWeakAndExpiredCredentials(t *testing.T) {
	const good = "NoGMaTO62jVVgPA9xY1XRtBlNtMsTk1sb7DYBMS6ig4"
	for _, c := range []struct {
		name, key, expires, want string
	}{
		{"a repeated key", "aaaaaaaaaaaaaaaa", "null", "apiKeys[1].key"},
		{"a PIN-like key", "0000000000001234", "null", "apiKeys[1].key"},
		{"a word key", "passwordpassword", "null", "apiKeys[1].key"},
		{"sixteen spaces", "                ", "null", "apiKeys[1].key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			testdb.ForEach(t, func(t *testing.T, st *store.Store) {
				before := testdb.Export(t, st, nil)
				file := `{"users": [{"id": "` + string(staffUser) + `", "partnerId": null, "email": "a@b.c", "permissions": ["*"]}],
 "apiKeys": [{"id": "` + string(id(111)) + `", "userId": "` + string(staffUser) + `", "key": "` + good + `", "expiresAt": null},
  {"id": "` + string(id(112)) + `", "userId": "` + string(staffUser) + `", "key": "` + c.key + `", "expiresAt": ` + c.expires + `}]}`
				_, err := importFile(t, st, file)
				if de := datasetError(t, err); de.Path != c.want {
					t.Errorf("error at %q, want %q (%v)", de.Path, c.want, err)
				}
				if strings.TrimSpace(c.key) != "" && strings.Contains(err.Error(), c.key) {
					t.Errorf("the error quotes the secret: %v", err)
				}
				if diff := cmp.Diff(before, testdb.Export(t, st, nil)); diff != "" {
					t.Errorf("the refused import changed the database (-before +after):\n%s", diff)
				}
				if _, err := auth.New(st, time.Now).Verify(ctx, auth.NewAttempt("Api-Key "+good)); !auth.Failed(err) {
					t.Errorf("the refused file's good key authenticates: %v", err)
				}
			})
		})
	}
	t.Run("a random key", func(t *testing.T) {
		testdb.ForEach(t, func(t *testing.T, st *store.Store) {
			file := `{"users": [{"id": "` + string(staffUser) + `", "partnerId": null, "email": "a@b.c", "permissions": ["*"]}],
 "apiKeys": [{"id": "` + string(id(111)) + `", "userId": "` + string(staffUser) + `", "key": "` + good + `", "expiresAt": "2999-01-01T00:00:00Z"}],
 "sessions": [{"id": "` + string(id(121)) + `", "userId": "` + string(staffUser) + `", "token": "` + good + `", "expiresAt": "2999-01-01T00:00:00Z"}]}`
			if _, err := importFile(t, st, file); err != nil {
				t.Fatal(err)
			}
			for _, header := range []string{"Api-Key " + good, "Bearer " + good} {
				if _, err := auth.New(st, time.Now).Verify(ctx, auth.NewAttempt(header)); err != nil {
					t.Errorf("%s…: %v", header[:10], err)
				}
			}
			// Judged strong at import, and kept so: serve will not call them weak.
			if weak, err := st.WeakCredentials(ctx, time.Now(), secrets.MinCredentialBits); err != nil || len(weak) != 0 {
				t.Errorf("weak credentials after a strong import: %+v, %v", weak, err)
			}
		})
	})
}

// An expired credential in a file is imported as expired, beside the others: the import succeeds,
// the expired key and session never authenticate, they are not weak usable credentials (serve
// starts), the list shows the key's past expiry, and the file's other key works.
func TestImportKeepsExpiredCredentialsExpired(t *testing.T) {
	const good, expired, expiredToken = "NoGMaTO62jVVgPA9xY1XRtBlNtMsTk1sb7DYBMS6ig4", "Rw9Idka187OW3B19bbQ8k3S72QQmgOnfOCaaCqD0twA", "hkjwTx3ePXaMLZT0A3N4uAtM_gvxBDjUgB3DZhkxFxU"
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		file := `{"users": [{"id": "` + string(staffUser) + `", "partnerId": null, "email": "a@b.c", "permissions": ["*"]}],
 "apiKeys": [{"id": "` + string(id(111)) + `", "userId": "` + string(staffUser) + `", "key": "` + good + `", "expiresAt": null},
  {"id": "` + string(id(112)) + `", "userId": "` + string(staffUser) + `", "key": "` + expired + `", "expiresAt": "2026-01-01T00:00:00Z"}],
 "sessions": [{"id": "` + string(id(121)) + `", "userId": "` + string(staffUser) + `", "token": "` + expiredToken + `", "expiresAt": "2020-01-01T00:00:00Z"}]}`
		counts, err := importFile(t, st, file)
		if err != nil {
			t.Fatalf("an import holding expired credentials failed: %v", err)
		}
		if counts.Added != 4 {
			t.Errorf("imported %+v, want the user, the 2 keys and the session added", counts)
		}
		a := auth.New(st, time.Now)
		if _, err := a.Verify(ctx, auth.NewAttempt("Api-Key "+good)); err != nil {
			t.Errorf("the file's unexpired key: %v", err)
		}
		for _, header := range []string{"Api-Key " + expired, "Bearer " + expiredToken} {
			if _, err := a.Verify(ctx, auth.NewAttempt(header)); !auth.Failed(err) {
				t.Errorf("expired %s…: %v, want unauthenticated", header[:10], err)
			}
		}
		if weak, err := st.WeakCredentials(ctx, time.Now(), secrets.MinCredentialBits); err != nil || len(weak) != 0 {
			t.Errorf("weak credentials: %+v, %v", weak, err)
		}
		keys, err := st.ListAPIKeys(ctx, store.APIKeyFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if k.ID == id(112) && (k.ExpiresAt == nil || !k.ExpiresAt.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))) {
				t.Errorf("the expired key lists as expiring %v", k.ExpiresAt)
			}
		}
	})
}

// The credentials a database holds are judged by what was kept of their strength, since their
// hashes cannot tell it: a usable one judged weak when it was imported (a dataset built in Go is
// imported without the file's checks, as the demo's is), or imported before secrets were judged
// at all (no strength kept), is weak; revoked and expired ones, and issued ones, are not.
func TestWeakCredentialsAreNamed(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		now := time.Now()
		later := now.Add(time.Hour)
		ds := &dataset.Dataset{
			Users: []domain.User{{ID: staffUser, Email: "a@b.c", Permissions: []domain.Permission{domain.PermAll}}},
			APIKeys: []domain.APIKey{
				{ID: id(111), UserID: staffUser, Key: "NoGMaTO62jVVgPA9xY1XRtBlNtMsTk1sb7DYBMS6ig4"},
				{ID: id(112), UserID: staffUser, Key: "passwordpassword"},
				{ID: id(113), UserID: staffUser, Key: "0000000000001234", ExpiresAt: &later},
				{ID: id(114), UserID: staffUser, Key: "aaaaaaaaaaaaaaaa"},                            // revoked below
				{ID: id(115), UserID: staffUser, Key: "Rw9Idka187OW3B19bbQ8k3S72QQmgOnfOCaaCqD0twA"}, // strength lost below
			},
			Sessions: []domain.Session{
				{ID: id(121), UserID: staffUser, Token: "NoGMaTO62jVVgPA9xY1XRtBlNtMsTk1sb7DYBMS6ig4", ExpiresAt: later},
				{ID: id(122), UserID: staffUser, Token: "passwordpassword", ExpiresAt: later},
			},
		}
		testdb.Import(t, st, ds)
		if err := st.RevokeAPIKey(ctx, id(114), now, domain.AuditEvent{ID: id(9001), At: now, ActorUserID: staffUser,
			Action: "api_key.revoke", TargetID: string(id(114)), Outcome: domain.OutcomeGranted}); err != nil {
			t.Fatal(err)
		}
		// As a key imported before secrets were judged (direct SQL: the attacker of the threat model).
		if _, err := testdb.SQLOf(t, st).ExecContext(ctx, `UPDATE api_keys SET secret_bits = NULL WHERE id = '`+string(id(115))+`'`); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateAPIKey(ctx, store.NewAPIKey{ID: id(116), UserID: staffUser, Prefix: "abcdefgh", Hash: bytes.Repeat([]byte{1}, 32),
			CreatedAt: now, SecretBits: secrets.IssuedCredentialBits}, domain.AuditEvent{ID: id(9002), At: now, ActorUserID: staffUser,
			Action: "api_key.create", TargetID: string(id(116)), Outcome: domain.OutcomeGranted}); err != nil {
			t.Fatal(err)
		}
		weak, err := st.WeakCredentials(ctx, now, secrets.MinCredentialBits)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, w := range weak {
			bits := "unknown"
			if w.Bits != nil && *w.Bits < secrets.MinCredentialBits {
				bits = "under"
			}
			got = append(got, w.Kind+" "+string(w.ID)+" "+bits)
		}
		want := []string{
			domain.CredentialAPIKey + " " + string(id(112)) + " under",
			domain.CredentialAPIKey + " " + string(id(113)) + " under",
			domain.CredentialAPIKey + " " + string(id(115)) + " unknown",
			domain.CredentialSession + " " + string(id(122)) + " under",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("weak credentials (-want +got):\n%s", diff)
		}
		// Once the weak key expires it no longer counts.
		if weak, err := st.WeakCredentials(ctx, later.Add(time.Second), secrets.MinCredentialBits); err != nil || len(weak) != 2 {
			t.Errorf("after the expiry: %+v, %v (want the key of unknown strength and the weak key without expiry)", weak, err)
		}
	})
}

// importFile imports a file as the import command does.
func importFile(t *testing.T, st *store.Store, file string) (dataset.Counts, error) {
	t.Helper()
	f, err := dataset.ReadFile(strings.NewReader(file), strings.NewReader(file))
	if err != nil {
		return dataset.Counts{}, err
	}
	return dataset.ImportFile(ctx, st, f, testdb.Ring(t), dataset.Options{})
}
