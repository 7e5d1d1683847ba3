package app

import (
	"crypto/rand"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"backoffice/internal/checkpoint"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
)

func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func writeSecretFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMasterKeyRing(t *testing.T) {
	oldKey, newKey := secrets.NewKey(), secrets.NewKey()
	old, _ := secrets.ParseMasterKey(oldKey)
	tests := []struct {
		name    string
		vars    map[string]string
		wantIDs []string
	}{
		{"one key, named by its fingerprint", map[string]string{"BACKOFFICE_MASTER_KEY": oldKey}, []string{old.ID}},
		{"a ring, first active", map[string]string{"BACKOFFICE_MASTER_KEYS": "k2026:" + newKey + "," + old.ID + ":" + oldKey}, []string{"k2026", old.ID}},
		{"a ring from a file, one entry a line", map[string]string{"BACKOFFICE_MASTER_KEYS_FILE": writeSecretFile(t, "k2026:"+newKey+"\n"+old.ID+":"+oldKey+"\n")}, []string{"k2026", old.ID}},
		{"one key from a file", map[string]string{"BACKOFFICE_MASTER_KEY_FILE": writeSecretFile(t, oldKey+"\n")}, []string{old.ID}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadConfig(envOf(tt.vars))
			if err != nil {
				t.Fatal(err)
			}
			ring, err := masterRing(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantIDs, ring.KeyIDs()); diff != "" {
				t.Errorf("ring ids (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMasterKeyRingRefusals(t *testing.T) {
	key := secrets.NewKey()
	tests := []struct {
		name string
		vars map[string]string
		want string
	}{
		{"both forms", map[string]string{"BACKOFFICE_MASTER_KEY": key, "BACKOFFICE_MASTER_KEYS": "k1:" + key}, "both set"},
		{"both forms, one from a file", map[string]string{"BACKOFFICE_MASTER_KEY_FILE": writeSecretFile(t, key), "BACKOFFICE_MASTER_KEYS": "k1:" + key}, "both set"},
		{"value and file", map[string]string{"BACKOFFICE_MASTER_KEYS": "k1:" + key, "BACKOFFICE_MASTER_KEYS_FILE": writeSecretFile(t, "k1:"+key)}, "both set"},
		{"bad id", map[string]string{"BACKOFFICE_MASTER_KEYS": "k 1:" + key}, "key id"},
		{"no id", map[string]string{"BACKOFFICE_MASTER_KEYS": key}, "id:base64key"},
		{"nothing", map[string]string{}, "make one with"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadConfig(envOf(tt.vars))
			if err == nil {
				_, err = masterRing(cfg)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one saying %q", err, tt.want)
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("the error shows the key: %v", err)
			}
		})
	}
}

func TestGatewayTokenFromFile(t *testing.T) {
	cfg, err := loadConfig(envOf(map[string]string{"BACKOFFICE_GATEWAY_TOKEN_FILE": writeSecretFile(t, "tok-123\n")}))
	if err != nil || cfg.GatewayToken != "tok-123" {
		t.Fatalf("gateway token = %q, %v; want tok-123", cfg.GatewayToken, err)
	}
}

// A secret's file that is empty, and a gateway token that cannot be sent in a header as it is,
// are refused at start, naming what is wrong, instead of read as no key or failing every push.
func TestSecretFilesRefusedAtStart(t *testing.T) {
	for _, c := range []struct {
		name string
		vars map[string]string
		want string
	}{
		{"an empty key file", map[string]string{"BACKOFFICE_MASTER_KEY_FILE": writeSecretFile(t, "\n")}, "BACKOFFICE_MASTER_KEY_FILE: "},
		{"an empty token file", map[string]string{"BACKOFFICE_GATEWAY_TOKEN_FILE": writeSecretFile(t, "")}, "is empty"},
		{"a token of two lines", map[string]string{"BACKOFFICE_GATEWAY_TOKEN_FILE": writeSecretFile(t, "tok\nX-Evil: 1\n")}, "white space or a control character"},
		{"a token with a space", map[string]string{"BACKOFFICE_GATEWAY_TOKEN": "tok en"}, "white space or a control character"},
	} {
		if _, err := loadConfig(envOf(c.vars)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

func TestPoolConfig(t *testing.T) {
	cases := []struct {
		name string
		vars map[string]string
		want store.Pool
		err  string // part of the error, when one is expected
	}{
		{"defaults", nil, store.DefaultPool(), ""},
		{"all set", map[string]string{
			"BACKOFFICE_DB_MAX_OPEN_CONNS": "40", "BACKOFFICE_DB_MAX_IDLE_CONNS": "5",
			"BACKOFFICE_DB_CONN_MAX_LIFETIME": "1h", "BACKOFFICE_DB_CONN_MAX_IDLE_TIME": "0",
		}, store.Pool{MaxOpenConns: 40, MaxIdleConns: 5, ConnMaxLifetime: time.Hour}, ""},
		{"a smaller pool keeps no more idle than open", map[string]string{"BACKOFFICE_DB_MAX_OPEN_CONNS": "3"},
			store.Pool{MaxOpenConns: 3, MaxIdleConns: 3, ConnMaxLifetime: store.DefaultPool().ConnMaxLifetime, ConnMaxIdleTime: store.DefaultPool().ConnMaxIdleTime}, ""},
		{"zero open", map[string]string{"BACKOFFICE_DB_MAX_OPEN_CONNS": "0"}, store.Pool{}, "BACKOFFICE_DB_MAX_OPEN_CONNS"},
		{"not a number", map[string]string{"BACKOFFICE_DB_MAX_IDLE_CONNS": "many"}, store.Pool{}, "BACKOFFICE_DB_MAX_IDLE_CONNS"},
		{"more idle than open", map[string]string{"BACKOFFICE_DB_MAX_OPEN_CONNS": "2", "BACKOFFICE_DB_MAX_IDLE_CONNS": "4"}, store.Pool{}, "exceeds"},
		{"bad duration", map[string]string{"BACKOFFICE_DB_CONN_MAX_LIFETIME": "30"}, store.Pool{}, "BACKOFFICE_DB_CONN_MAX_LIFETIME"},
		{"negative duration", map[string]string{"BACKOFFICE_DB_CONN_MAX_IDLE_TIME": "-1m"}, store.Pool{}, "BACKOFFICE_DB_CONN_MAX_IDLE_TIME"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := loadConfig(envOf(c.vars))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error = %v, want one about %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, cfg.Pool); diff != "" {
				t.Errorf("pool (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGatewayAttemptTimeoutConfig(t *testing.T) {
	cases := []struct {
		name string
		vars map[string]string
		args []string
		want time.Duration
		err  string // part of the error, when one is expected
	}{
		{"unset: the remaining budget", nil, nil, 0, ""},
		{"from the environment", map[string]string{"BACKOFFICE_GATEWAY_ATTEMPT_TIMEOUT": "2s"}, nil, 2 * time.Second, ""},
		{"zero: no cut", map[string]string{"BACKOFFICE_GATEWAY_ATTEMPT_TIMEOUT": "0"}, nil, 0, ""},
		{"the flag overrides", map[string]string{"BACKOFFICE_GATEWAY_ATTEMPT_TIMEOUT": "2s"}, []string{"--gateway-attempt-timeout", "750ms"}, 750 * time.Millisecond, ""},
		{"not a duration", map[string]string{"BACKOFFICE_GATEWAY_ATTEMPT_TIMEOUT": "3"}, nil, 0, "BACKOFFICE_GATEWAY_ATTEMPT_TIMEOUT"},
		{"negative", map[string]string{"BACKOFFICE_GATEWAY_ATTEMPT_TIMEOUT": "-1s"}, nil, 0, "BACKOFFICE_GATEWAY_ATTEMPT_TIMEOUT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := loadConfig(envOf(c.vars))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error = %v, want one about %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			cfg.serveFlags(fs)
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			if cfg.GatewayAttemptTimeout != c.want {
				t.Errorf("attempt timeout = %v, want %v", cfg.GatewayAttemptTimeout, c.want)
			}
		})
	}
}

// A memory limit prints in the largest unit that holds it exactly, and reads back the same.
func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{512 << 20: "512MiB", 2 << 30: "2GiB", 1536 << 10: "1536KiB", 1000: "1000B", 3 << 40: "3TiB"} {
		got := formatSize(n)
		if back, err := parseMemoryLimit(got); got != want || err != nil || back != n {
			t.Errorf("formatSize(%d) = %s (reads back as %d, %v), want %s", n, got, back, err, want)
		}
	}
}

// The audit log's origin is the default unless BACKOFFICE_AUDIT_ORIGIN names another; one that
// cannot name a signed note's key is refused at start, not at the first checkpoint.
func TestAuditOriginConfig(t *testing.T) {
	if cfg, err := loadConfig(envOf(nil)); err != nil || cfg.AuditOrigin != checkpoint.DefaultOrigin {
		t.Fatalf("default: %q %v", cfg.AuditOrigin, err)
	}
	if cfg, err := loadConfig(envOf(map[string]string{"BACKOFFICE_AUDIT_ORIGIN": " pay.example.com/audit "})); err != nil || cfg.AuditOrigin != "pay.example.com/audit" {
		t.Fatalf("set: %q %v", cfg.AuditOrigin, err)
	}
	for _, bad := range []string{"pay example", "pay+example"} {
		if _, err := loadConfig(envOf(map[string]string{"BACKOFFICE_AUDIT_ORIGIN": bad})); err == nil || !strings.Contains(err.Error(), "BACKOFFICE_AUDIT_ORIGIN") {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

// A witness policy file is read at start: none when the variable is unset; one that cannot be
// read, is not a policy, or has a witness without a URL stops serve, naming the variable.
func TestAuditWitnessesConfig(t *testing.T) {
	if cfg, err := loadConfig(envOf(nil)); err != nil || cfg.AuditWitnessPolicy != nil {
		t.Fatalf("unset: %v %v", cfg.AuditWitnessPolicy, err)
	}
	_, plain, err := note.GenerateKey(rand.Reader, "witness.example/w1")
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := fnote.VKeyToCosignatureV1(plain)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := file("good", "witness w1 "+vkey+" https://w1.example/\nquorum w1\n")
	cfg, err := loadConfig(envOf(map[string]string{"BACKOFFICE_AUDIT_WITNESSES": good}))
	if err != nil || cfg.AuditWitnessPolicy == nil || len(cfg.AuditWitnessPolicy.Witnesses()) != 1 {
		t.Fatalf("a policy: %v %v", cfg.AuditWitnessPolicy, err)
	}
	for name, path := range map[string]string{
		"missing":    filepath.Join(dir, "missing"),
		"not policy": file("bad", "witness w1 "+vkey+" https://w1.example/\n"),
		"no URL":     file("nourl", "witness w1 "+vkey+"\nquorum w1\n"),
	} {
		if _, err := loadConfig(envOf(map[string]string{"BACKOFFICE_AUDIT_WITNESSES": path})); err == nil || !strings.Contains(err.Error(), "BACKOFFICE_AUDIT_WITNESSES") {
			t.Errorf("%s: %v; want an error naming the variable", name, err)
		}
	}
}
