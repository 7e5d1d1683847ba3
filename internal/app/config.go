package app

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"backoffice/internal/checkpoint"
	"backoffice/internal/store"
	"backoffice/internal/witness"
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
	// GatewayAttemptTimeout cuts one gateway request short; 0 lets it run for what is left of
	// GatewayTimeout.
	GatewayAttemptTimeout time.Duration
	LogLevel              slog.Level
	// MetricsAddr is where GET /metrics is served: "" on the main listener, "off" nowhere, or
	// an address of a listener of its own.
	MetricsAddr string
	// RateLimit (requests/s) and RateBurst bound each credential; 0 turns the limit off.
	RateLimit float64
	RateBurst int
	// AuthFailureLimit (failures/minute) and AuthFailureBurst bound failed authentications per
	// client address; 0 turns the limit off.
	AuthFailureLimit float64
	AuthFailureBurst int
	// TrustedProxyHeader names the header a trusted load balancer writes the client address in;
	// "" uses the connection's address.
	TrustedProxyHeader string
	// Pool sizes the database connection pool of this process.
	Pool store.Pool
	// Demo (--demo) uses the database and development master key of `serve --demo` where no
	// other is configured; serve also makes them and starts a gateway simulator.
	Demo bool
	// MemoryLimit is the Go runtime's soft memory limit for serve, in bytes (math.MaxInt64: off);
	// GOMEMLIMIT, when set, wins (MemoryLimitFromGo).
	MemoryLimit       int64
	MemoryLimitFromGo bool
	// CORSOrigins are the origins whose pages may call the operations from a browser; none: off.
	CORSOrigins []string
	// AuditCheckpoints is the file serve appends signed checkpoints of the audit trail to, and
	// audit verify reads ("": serve keeps them in its log only, and warns).
	AuditCheckpoints string
	// secretFiles are the files the secrets were read from (the _FILE variables): see ownFiles.
	secretFiles []string
	// AuditOrigin names the audit log in its checkpoints (BACKOFFICE_AUDIT_ORIGIN, default
	// checkpoint.DefaultOrigin): their origin line and their signatures' key name.
	AuditOrigin string
	// AuditWitnesses is the witness policy file (BACKOFFICE_AUDIT_WITNESSES, c2sp.org/tlog-policy,
	// "" for none) and AuditWitnessPolicy what it says: read at start, so that a policy serve
	// cannot follow (unreadable, or a witness without a URL to send checkpoints to) stops it there.
	AuditWitnesses     string
	AuditWitnessPolicy *witness.Policy
	// AuditRetention is how long audit events are kept before `audit prune` may remove them
	// (BACKOFFICE_AUDIT_RETENTION, default 12 months: PCI DSS 10.5.1).
	AuditRetention Retention
	// OAuth is the identity provider whose access tokens serve accepts (Issuer "": none).
	OAuth OAuthConfig
	// AllowWeakCredentials lets serve start (and keys status pass) while usable credentials are
	// not known to carry secrets.MinCredentialBits: named for what it allows, off by default.
	AllowWeakCredentials bool
}

// MetricsOff is the BACKOFFICE_METRICS_ADDR value that disables metrics.
const MetricsOff = "off"

// Default limits: generous for people and scripts, tight for guessing.
const (
	defaultRateLimit        = 50
	defaultRateBurst        = 100
	defaultAuthFailureLimit = 10
	defaultAuthFailureBurst = 20
	// defaultMemoryLimit bounds serve's memory: near it the collector works harder instead of
	// the process growing, so a burst does not leave RSS high. GOGC stays the runtime's default.
	defaultMemoryLimit = 512 << 20
)

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
		MetricsAddr:    strings.TrimSpace(getenv("BACKOFFICE_METRICS_ADDR")),
		RateLimit:      defaultRateLimit, RateBurst: defaultRateBurst,
		AuthFailureLimit: defaultAuthFailureLimit, AuthFailureBurst: defaultAuthFailureBurst,
		TrustedProxyHeader: strings.TrimSpace(getenv("BACKOFFICE_TRUSTED_PROXY_HEADER")),
		Pool:               store.DefaultPool(),
		MemoryLimit:        defaultMemoryLimit,
		MemoryLimitFromGo:  getenv("GOMEMLIMIT") != "",
		AuditCheckpoints:   strings.TrimSpace(getenv("BACKOFFICE_AUDIT_CHECKPOINTS")),
		AuditOrigin:        orDefault(strings.TrimSpace(getenv("BACKOFFICE_AUDIT_ORIGIN")), checkpoint.DefaultOrigin),
		AuditWitnesses:     strings.TrimSpace(getenv("BACKOFFICE_AUDIT_WITNESSES")),
	}
	if err := checkpoint.ValidOrigin(c.AuditOrigin); err != nil {
		return c, fmt.Errorf("BACKOFFICE_AUDIT_ORIGIN: %w", err)
	}
	var err error
	if c.AuditWitnessPolicy, err = loadWitnessPolicy(c.AuditWitnesses); err != nil {
		return c, fmt.Errorf("BACKOFFICE_AUDIT_WITNESSES: %w", err)
	}
	if c.AuditRetention, err = ParseRetention(getenv("BACKOFFICE_AUDIT_RETENTION")); err != nil {
		return c, fmt.Errorf("BACKOFFICE_AUDIT_RETENTION: %w", err)
	}
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
	for _, name := range []string{"BACKOFFICE_MASTER_KEY", "BACKOFFICE_MASTER_KEYS", "BACKOFFICE_GATEWAY_TOKEN"} {
		if f := strings.TrimSpace(getenv(name + "_FILE")); f != "" {
			c.secretFiles = append(c.secretFiles, f)
		}
	}
	if c.GatewayToken, err = secretVar(getenv, "BACKOFFICE_GATEWAY_TOKEN"); err != nil {
		return c, err
	}
	if strings.ContainsFunc(string(c.GatewayToken), func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		// Sent as it is in an Authorization header, where such a character makes every push fail.
		return c, errors.New("BACKOFFICE_GATEWAY_TOKEN: holds white space or a control character (a token file of more than one line?)")
	}
	if v := getenv("BACKOFFICE_GATEWAY_TIMEOUT"); v != "" {
		if c.GatewayTimeout, err = time.ParseDuration(v); err != nil || c.GatewayTimeout <= 0 {
			return c, fmt.Errorf("BACKOFFICE_GATEWAY_TIMEOUT: %q is not a positive duration such as 10s", v)
		}
	}
	if err := durationVar(getenv, "BACKOFFICE_GATEWAY_ATTEMPT_TIMEOUT", &c.GatewayAttemptTimeout); err != nil {
		return c, err
	}
	for _, r := range []struct {
		name string
		dst  *float64
	}{{"BACKOFFICE_RATE_LIMIT", &c.RateLimit}, {"BACKOFFICE_AUTH_FAILURE_LIMIT", &c.AuthFailureLimit}} {
		if v := getenv(r.name); v != "" {
			if *r.dst, err = parseRate(v); err != nil {
				return c, fmt.Errorf("%s: %w", r.name, err)
			}
		}
	}
	for _, b := range []struct {
		name string
		dst  *int
	}{{"BACKOFFICE_RATE_BURST", &c.RateBurst}, {"BACKOFFICE_AUTH_FAILURE_BURST", &c.AuthFailureBurst}} {
		if v := getenv(b.name); v != "" {
			if *b.dst, err = strconv.Atoi(v); err != nil || *b.dst < 1 {
				return c, fmt.Errorf("%s: %q is not a whole number from 1 up", b.name, v)
			}
		}
	}
	if v := getenv("BACKOFFICE_LOG_LEVEL"); v != "" {
		if err := (levelFlag{&c.LogLevel}).Set(v); err != nil {
			return c, fmt.Errorf("BACKOFFICE_LOG_LEVEL: %w", err)
		}
	}
	if err := loadPool(getenv, &c.Pool); err != nil {
		return c, err
	}
	if c.CORSOrigins, err = parseOrigins(getenv("BACKOFFICE_CORS_ORIGINS")); err != nil {
		return c, fmt.Errorf("BACKOFFICE_CORS_ORIGINS: %w", err)
	}
	if v := getenv("BACKOFFICE_MEMORY_LIMIT"); v != "" {
		if c.MemoryLimit, err = parseMemoryLimit(v); err != nil {
			return c, fmt.Errorf("BACKOFFICE_MEMORY_LIMIT: %w", err)
		}
	}
	if err := loadOAuth(getenv, &c.OAuth); err != nil {
		return c, err
	}
	if v := getenv(allowWeakCredentialsVar); v != "" {
		if c.AllowWeakCredentials, err = strconv.ParseBool(v); err != nil {
			return c, fmt.Errorf("%s: %q is not true or false", allowWeakCredentialsVar, v)
		}
	}
	return c, nil
}

// loadWitnessPolicy reads the witness policy file at path ("": none), whose every witness must
// have the URL serve sends checkpoints to.
func loadWitnessPolicy(path string) (*witness.Policy, error) {
	if path == "" {
		return nil, nil
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := witness.ParsePolicy(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := p.RequireURLs(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// parseMemoryLimit reads a size as GOMEMLIMIT spells it: a whole number of bytes with an
// optional B, KiB, MiB, GiB or TiB suffix, or "off".
func parseMemoryLimit(v string) (int64, error) {
	if strings.EqualFold(v, "off") {
		return math.MaxInt64, nil
	}
	units := []struct {
		suffix string
		shift  uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}
	digits, shift := v, uint(0)
	for _, u := range units {
		if d, ok := strings.CutSuffix(v, u.suffix); ok {
			digits, shift = d, u.shift
			break
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("%q is not a size such as 512MiB, 2GiB or off", v)
	}
	return n << shift, nil
}

// memoryFlag is a flag.Value over a memory limit.
type memoryFlag struct{ dst *int64 }

func (m memoryFlag) String() string {
	if m.dst == nil {
		return ""
	}
	if *m.dst == math.MaxInt64 {
		return "off"
	}
	return formatSize(*m.dst)
}

// formatSize writes n bytes as a user writes a size: in the largest unit that holds it exactly
// (512MiB, 1536KiB, 1000B).
func formatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// levelFlag is a flag.Value over a log level, written as the users write it: info, not INFO.
type levelFlag struct{ dst *slog.Level }

func (l levelFlag) String() string {
	if l.dst == nil {
		return ""
	}
	return strings.ToLower(l.dst.String())
}

func (l levelFlag) Set(v string) error {
	if err := l.dst.UnmarshalText([]byte(v)); err != nil {
		return fmt.Errorf("%q is not one of debug, info, warn, error", v)
	}
	return nil
}

func (m memoryFlag) Set(v string) error {
	n, err := parseMemoryLimit(v)
	if err != nil {
		return err
	}
	*m.dst = n
	return nil
}

// parseRate reads a non-negative rate; "off" and 0 turn the limit off.
func parseRate(v string) (float64, error) {
	if strings.EqualFold(v, "off") {
		return 0, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%q is not a rate such as 50, 0.5 or off", v)
	}
	return f, nil
}

// rateFlag is a flag.Value over a rate, accepting "off".
type rateFlag struct{ dst *float64 }

func (r rateFlag) String() string {
	if r.dst == nil {
		return ""
	}
	return strconv.FormatFloat(*r.dst, 'g', -1, 64)
}

func (r rateFlag) Set(v string) error {
	f, err := parseRate(v)
	if err != nil {
		return err
	}
	*r.dst = f
	return nil
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
	v = strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("%s_FILE: %s is empty", name, file)
	}
	return secret(v), nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// databaseFlags registers the flags common to the commands that use the database.
func (c *Config) databaseFlags(fs *flag.FlagSet) {
	c.databaseURLFlag(fs)
	fs.BoolVar(&c.Demo, "demo", false, demoFlagText)
}

func (c *Config) databaseURLFlag(fs *flag.FlagSet) {
	fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "sqlite:PATH or postgres://… (BACKOFFICE_DATABASE_URL)")
}

func (c *Config) serveFlags(fs *flag.FlagSet) {
	c.databaseURLFlag(fs)
	fs.BoolVar(&c.Demo, "demo", false, "run with no configuration: SQLite and a development master key in ./"+demoDir+"/ (made on first use), demo data, a gateway simulator")
	fs.StringVar(&c.Addr, "addr", c.Addr, "listen address (BACKOFFICE_ADDR)")
	fs.StringVar(&c.GatewayURL, "gateway-url", c.GatewayURL, "device gateway base URL (BACKOFFICE_GATEWAY_URL)")
	fs.DurationVar(&c.GatewayTimeout, "gateway-timeout", c.GatewayTimeout, "total budget of one push, retries included (BACKOFFICE_GATEWAY_TIMEOUT)")
	fs.DurationVar(&c.GatewayAttemptTimeout, "gateway-attempt-timeout", c.GatewayAttemptTimeout, "cut one gateway request after this long, to retry within the budget; 0: no cut (BACKOFFICE_GATEWAY_ATTEMPT_TIMEOUT)")
	fs.Var(levelFlag{&c.LogLevel}, "log-level", "debug, info, warn or error (BACKOFFICE_LOG_LEVEL)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", c.MetricsAddr, "where GET /metrics is served: empty for the main listener, off, or an address (BACKOFFICE_METRICS_ADDR)")
	fs.Var(rateFlag{&c.RateLimit}, "rate-limit", "requests per second per credential, or off (BACKOFFICE_RATE_LIMIT)")
	fs.IntVar(&c.RateBurst, "rate-burst", c.RateBurst, "requests a credential may make at once (BACKOFFICE_RATE_BURST)")
	fs.Var(rateFlag{&c.AuthFailureLimit}, "auth-failure-limit", "failed authentications per minute per client address, or off (BACKOFFICE_AUTH_FAILURE_LIMIT)")
	fs.IntVar(&c.AuthFailureBurst, "auth-failure-burst", c.AuthFailureBurst, "failed authentications a client address may make at once (BACKOFFICE_AUTH_FAILURE_BURST)")
	fs.Var(memoryFlag{&c.MemoryLimit}, "memory-limit", "soft memory limit of the Go runtime, e.g. 512MiB, or off; GOMEMLIMIT wins (BACKOFFICE_MEMORY_LIMIT)")
	fs.Var(originsFlag{&c.CORSOrigins}, "cors-origins", "origins whose pages may call the API from a browser, comma-separated, e.g. https://crm.example.com; none: CORS off (BACKOFFICE_CORS_ORIGINS)")
	fs.StringVar(&c.TrustedProxyHeader, "trusted-proxy-header", c.TrustedProxyHeader, "header a trusted load balancer puts the client address in, e.g. X-Forwarded-For (BACKOFFICE_TRUSTED_PROXY_HEADER)")
	c.OAuth.flags(fs)
	fs.BoolVar(&c.AllowWeakCredentials, "allow-weak-credentials", c.AllowWeakCredentials, "serve even while usable API keys or sessions are not known to carry 128 random bits; 'backoffice keys status' names them ("+allowWeakCredentialsVar+")")
}

// errNoMasterKey says how to make a key, in one line.
var errNoMasterKey = errors.New("BACKOFFICE_MASTER_KEY is not set; make one with: export BACKOFFICE_MASTER_KEY=$(head -c 32 /dev/urandom | base64) (or set BACKOFFICE_MASTER_KEYS, a key ring; or pass --demo for the database and development key of serve --demo)")

// ownFiles are the files this configuration reads or writes: the SQLite database and its
// journals, the checkpoints file and its prune notes, the files the secrets came from (the demo's
// key among them). A command's output never replaces one (writeOutput): export database.db
// would put JSON where the data was, and the data that export leaves out (credentials, sealed
// SSNs) would be gone.
func (c Config) ownFiles() []string {
	files := slices.Clone(c.secretFiles)
	if path, ok := strings.CutPrefix(c.DatabaseURL, "sqlite:"); ok {
		files = append(files, path, path+"-wal", path+"-shm", path+"-journal")
	}
	if c.AuditCheckpoints != "" {
		files = append(files, c.AuditCheckpoints, c.AuditCheckpoints+prunedNotesSuffix)
	}
	if c.Demo {
		files = append(files, demoKeyPath)
	}
	return files
}
