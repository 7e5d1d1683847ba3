package app

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"backoffice/internal/store"
)

// Config is the whole configuration, parsed once from the environment and then from flags of the
// same meaning, which override it.
type Config struct {
	Addr           string
	DatabaseURL    string
	MasterKey      secret // one key, named by its fingerprint
	MasterKeys     secret // a ring: id:base64key entries, the first active
	GatewayURL     string
	GatewayToken   secret
	GatewayTimeout time.Duration
	LogLevel       slog.Level
	// Pool sizes the database connection pool of this process.
	Pool store.Pool
}

// secret is a configuration value that prints masked.
type secret string

func (s secret) String() string {
	if s == "" {
		return ""
	}
	return "[set]"
}

func (s secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

const (
	defaultAddr        = "127.0.0.1:8080"
	defaultDatabaseURL = "sqlite:backoffice.db"
)

// loadConfig reads the BACKOFFICE_* variables. A secret may also be given as a file named by the
// variable with a _FILE suffix, for container and secret-manager deployments.
func loadConfig(getenv func(string) string) (Config, error) {
	c := Config{
		Addr:           orDefault(getenv("BACKOFFICE_ADDR"), defaultAddr),
		DatabaseURL:    orDefault(getenv("BACKOFFICE_DATABASE_URL"), defaultDatabaseURL),
		GatewayURL:     getenv("BACKOFFICE_GATEWAY_URL"),
		GatewayTimeout: 10 * time.Second,
		Pool:           store.DefaultPool,
	}
	var err error
	if c.MasterKey, err = secretVar(getenv, "BACKOFFICE_MASTER_KEY"); err != nil {
		return c, err
	}
	if c.MasterKeys, err = secretVar(getenv, "BACKOFFICE_MASTER_KEYS"); err != nil {
		return c, err
	}
	if c.MasterKey != "" && c.MasterKeys != "" {
		// Two sources of keys would leave it unclear which key is active.
		return c, errors.New("BACKOFFICE_MASTER_KEY and BACKOFFICE_MASTER_KEYS are both set; set one (BACKOFFICE_MASTER_KEYS can hold the old key as one of its entries)")
	}
	if c.GatewayToken, err = secretVar(getenv, "BACKOFFICE_GATEWAY_TOKEN"); err != nil {
		return c, err
	}
	if v := getenv("BACKOFFICE_GATEWAY_TIMEOUT"); v != "" {
		if c.GatewayTimeout, err = time.ParseDuration(v); err != nil || c.GatewayTimeout <= 0 {
			return c, fmt.Errorf("BACKOFFICE_GATEWAY_TIMEOUT: %q is not a positive duration such as 10s", v)
		}
	}
	if v := getenv("BACKOFFICE_LOG_LEVEL"); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			return c, fmt.Errorf("BACKOFFICE_LOG_LEVEL: %q is not one of debug, info, warn, error", v)
		}
	}
	if err := loadPool(getenv, &c.Pool); err != nil {
		return c, err
	}
	return c, nil
}

// loadPool reads the pool settings over the defaults. Idle connections beyond the open limit
// would never be used, so that combination is refused rather than silently capped.
func loadPool(getenv func(string) string, p *store.Pool) error {
	steps := []error{
		intVar(getenv, "BACKOFFICE_DB_MAX_OPEN_CONNS", 1, &p.MaxOpenConns),
		intVar(getenv, "BACKOFFICE_DB_MAX_IDLE_CONNS", 0, &p.MaxIdleConns),
		durationVar(getenv, "BACKOFFICE_DB_CONN_MAX_LIFETIME", &p.ConnMaxLifetime),
		durationVar(getenv, "BACKOFFICE_DB_CONN_MAX_IDLE_TIME", &p.ConnMaxIdleTime),
	}
	if err := errors.Join(steps...); err != nil {
		return err
	}
	if getenv("BACKOFFICE_DB_MAX_IDLE_CONNS") == "" {
		p.MaxIdleConns = min(p.MaxIdleConns, p.MaxOpenConns)
	}
	if p.MaxIdleConns > p.MaxOpenConns {
		return fmt.Errorf("BACKOFFICE_DB_MAX_IDLE_CONNS (%d) exceeds BACKOFFICE_DB_MAX_OPEN_CONNS (%d)", p.MaxIdleConns, p.MaxOpenConns)
	}
	return nil
}

// intVar sets *dst from the variable when it is set, refusing values below lowest.
func intVar(getenv func(string) string, name string, lowest int, dst *int) error {
	v := getenv(name)
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lowest {
		return fmt.Errorf("%s: %q is not a whole number of at least %d", name, v, lowest)
	}
	*dst = n
	return nil
}

// durationVar sets *dst from the variable when it is set; 0 means "no limit".
func durationVar(getenv func(string) string, name string, dst *time.Duration) error {
	v := getenv(name)
	if v == "" {
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return fmt.Errorf("%s: %q is not a duration such as 30m (0 for no limit)", name, v)
	}
	*dst = d
	return nil
}

func secretVar(getenv func(string) string, name string) (secret, error) {
	v, file := getenv(name), getenv(name+"_FILE")
	if v != "" && file != "" {
		return "", fmt.Errorf("%s and %s_FILE are both set; set one", name, name)
	}
	if file == "" {
		return secret(v), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s_FILE: %w", name, err)
	}
	return secret(strings.TrimSpace(string(b))), nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// flags registers the flags common to the commands that use the database.
func (c *Config) databaseFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "sqlite:PATH or postgres://… (BACKOFFICE_DATABASE_URL)")
}

func (c *Config) serveFlags(fs *flag.FlagSet) {
	c.databaseFlags(fs)
	fs.StringVar(&c.Addr, "addr", c.Addr, "listen address (BACKOFFICE_ADDR)")
	fs.StringVar(&c.GatewayURL, "gateway-url", c.GatewayURL, "device gateway base URL (BACKOFFICE_GATEWAY_URL)")
	fs.DurationVar(&c.GatewayTimeout, "gateway-timeout", c.GatewayTimeout, "total budget of one push, retries included (BACKOFFICE_GATEWAY_TIMEOUT)")
	fs.TextVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error (BACKOFFICE_LOG_LEVEL)")
}

// errNoMasterKey says how to make a key, in one line.
var errNoMasterKey = errors.New("BACKOFFICE_MASTER_KEY is not set; make one with: export BACKOFFICE_MASTER_KEY=$(head -c 32 /dev/urandom | base64) (or set BACKOFFICE_MASTER_KEYS, a key ring)")
