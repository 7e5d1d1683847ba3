package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/testdb"
)

// serveStarts runs serve with vars until it says it is serving (true) or returns (false, with its
// error), then stops it; logs is what it logged.
func serveStarts(t *testing.T, vars map[string]string, args ...string) (served bool, logs string, err error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Env{Args: append([]string{"serve", "--addr", freeAddr(t)}, args...), Getenv: envOf(vars),
			Stdin: strings.NewReader(""), Stdout: &lockedBuffer{}, Stderr: out})
	}()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case err := <-done:
			return false, out.String(), err
		case <-deadline:
			t.Fatalf("serve neither served nor stopped in a minute:\n%s", out.String())
		case <-time.After(20 * time.Millisecond):
			if strings.Contains(out.String(), `"msg":"serving"`) {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("serve stopped with %v", err)
				}
				return true, out.String(), nil
			}
		}
	}
}

// A database holding a usable weak credential (here imported from a dataset built in Go, which
// skips the file's checks, as a database filled before the rule would hold one) is refused by
// serve, which names it, until it is revoked or the operator allows it by name; keys status names
// it too and fails. On each engine.
func TestServeRefusesWeakCredentials(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			url := testdb.URL(t, engine)
			st := testdb.OpenURL(t, url)
			weakKey := demoID(112)
			testdb.Import(t, st, &dataset.Dataset{
				Users: []domain.User{{ID: testStaff, Email: "ops@example.com", Permissions: []domain.Permission{domain.PermAll}}},
				APIKeys: []domain.APIKey{{ID: testImportKey, UserID: testStaff, Key: testStaffKey},
					{ID: weakKey, UserID: testStaff, Key: "0000000000001234"}},
			})
			c := newCLI(t, url, testdb.DefaultKeyID)

			served, _, err := serveStarts(t, c.vars)
			if served || err == nil || !strings.Contains(err.Error(), "1 usable credentials are not known to carry 128 random bits (the first: API key "+string(weakKey)) ||
				!strings.Contains(err.Error(), allowWeakCredentialsVar) {
				t.Errorf("serve with a weak key: served %v, %v; want it refused, naming the key and %s", served, err, allowWeakCredentialsVar)
			}
			status, _, err := c.run("keys", "status")
			if !strings.Contains(status, "WEAK CREDENTIALS") || !strings.Contains(squash(status), "API-key "+string(weakKey)+" "+string(testStaff)+" about 12 bits") ||
				!strings.Contains(status, "serve refuses to start") || strings.Contains(status, string(testImportKey)) || err == nil {
				t.Errorf("keys status with a weak key: %v\n%s", err, status)
			}

			// Allowed by name: served, with a warning; keys status passes.
			c.vars[allowWeakCredentialsVar] = "true"
			if served, logs, err := serveStarts(t, c.vars); !served || !strings.Contains(logs, "not known to carry 128 random bits, as allowed") {
				t.Errorf("serve allowed weak credentials: served %v, %v\n%s", served, err, logs)
			}
			delete(c.vars, allowWeakCredentialsVar)
			if served, _, err := serveStarts(t, c.vars, "--allow-weak-credentials"); !served {
				t.Errorf("serve --allow-weak-credentials: %v", err)
			}

			// Revoked, it is harmless: served without any allowance.
			c.mustRun("apikey", "revoke", string(weakKey))
			if served, _, err := serveStarts(t, c.vars); !served {
				t.Errorf("serve once the weak key is revoked: %v", err)
			}
			if status := c.mustRun("keys", "status"); !strings.Contains(status, "Every usable API key and session carries at least 128 random bits") {
				t.Errorf("keys status once the weak key is revoked:\n%s", status)
			}
		})
	}
}

// The demo's keys are printed for anyone to read, and so are weak by the rule: serve --demo serves
// them in its own database, but serve without --demo refuses that database (demo data taken to
// production), and so does serve --demo on any other database.
func TestDemoKeysOnlyServeTheDemo(t *testing.T) {
	t.Chdir(t.TempDir())
	if served, _, err := serveStarts(t, nil, "--demo"); !served {
		t.Fatalf("serve --demo: %v", err)
	}
	key, err := os.ReadFile(demoKeyPath)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"BACKOFFICE_DATABASE_URL": "sqlite:" + demoDatabasePath, "BACKOFFICE_MASTER_KEY": strings.TrimSpace(string(key))}
	if served, _, err := serveStarts(t, vars); served || err == nil || !strings.Contains(err.Error(), "usable credentials are not known to carry 128 random bits") {
		t.Errorf("serve on the demo's database without --demo: served %v, %v; want it refused", served, err)
	}
	copyPath := filepath.Join(t.TempDir(), "copy.db")
	data, err := os.ReadFile(demoDatabasePath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if served, _, err := serveStarts(t, map[string]string{"BACKOFFICE_DATABASE_URL": "sqlite:" + copyPath}, "--demo"); served || err == nil {
		t.Errorf("serve --demo on another database holding the demo's keys: served %v, %v; want it refused", served, err)
	}
	if out, _, err := (&cli{t: t, vars: map[string]string{}}).run("keys", "status", "--demo"); err != nil || !strings.Contains(out, "WEAK CREDENTIALS") || !strings.Contains(out, "serve starts with them") {
		t.Errorf("keys status --demo: %v\n%s", err, out)
	}
}
