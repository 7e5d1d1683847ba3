// Package app is the backoffice command: it parses the subcommand and configuration, wires the
// store, cipher, gateway and HTTP API together, and returns errors instead of exiting, so that
// end-to-end tests run exactly what users run.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"backoffice/internal/dataset"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
)

// Env is the process's outside world.
type Env struct {
	Args   []string // without the program name
	Getenv func(string) string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

const usage = `usage: backoffice <command> [flags]

commands:
  serve [--demo]            run the HTTP API (applies migrations first)
  import FILE|-             add a dataset file's records, all or nothing
  export FILE|- [--include-secrets]
                            write the whole database as a dataset file
  gateway-sim [--addr]      run the device gateway simulator
  apikey create --user ID [--expires 90d|DATE] [--name TEXT]
                            issue an API key; prints it once
  apikey list [--user ID] [--prefix PREFIX]
                            list API keys (never the keys themselves)
  apikey revoke ID          revoke an API key, at once on every replica
  session create --user ID [--ttl 24h]
                            issue a session token; prints it once
  session list [--user ID]  list sessions (never their tokens)
  session revoke ID         revoke a session
  keys status               count SSNs per master key id
  keys rewrap [--batch N]   re-encrypt every SSN under the active master key

The apikey, session and keys commands write audit events; --actor USERID names the user to record
(default: the system actor 00000000-0000-0000-0000-000000000000). See docs/credentials.md.

Configuration comes from BACKOFFICE_* variables (see README.md); flags override them.`

// ErrUsage marks a command line that could not be understood.
var ErrUsage = errors.New("usage")

// Run runs one command until it is done or ctx is cancelled (SIGINT/SIGTERM in main).
func Run(ctx context.Context, env Env) error {
	if len(env.Args) == 0 {
		fmt.Fprintln(env.Stderr, usage)
		return ErrUsage
	}
	cfg, err := loadConfig(env.Getenv)
	if err != nil {
		return err
	}
	cmd, args := env.Args[0], env.Args[1:]
	switch cmd {
	case "serve":
		return runServe(ctx, env, cfg, args)
	case "import":
		return runImport(ctx, env, cfg, args)
	case "export":
		return runExport(ctx, env, cfg, args)
	case "gateway-sim":
		return runGatewaySim(ctx, env, cfg, args)
	case "apikey":
		return runAPIKey(ctx, env, cfg, args)
	case "session":
		return runSession(ctx, env, cfg, args)
	case "keys":
		return runKeys(ctx, env, cfg, args)
	case "help", "-h", "--help":
		fmt.Fprintln(env.Stdout, usage)
		return nil
	}
	fmt.Fprintln(env.Stderr, usage)
	return fmt.Errorf("%w: unknown command %q", ErrUsage, cmd)
}

func newFlagSet(name string, env Env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	return fs
}

// parseNoArgs parses the flags of a command that takes no positional arguments.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	pos, err := parseArgs(fs, args)
	if err == nil && len(pos) != 0 {
		err = fmt.Errorf("%w: %s takes no arguments", ErrUsage, fs.Name())
	}
	return err
}

// parseArgs parses flags that may come before or after the positional arguments.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

// openStore opens the database with the configured pool and applies pending migrations.
func openStore(ctx context.Context, cfg Config) (*store.Store, error) {
	st, err := store.Open(ctx, cfg.DatabaseURL, store.WithPool(cfg.Pool))
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// masterRing builds the key ring: BACKOFFICE_MASTER_KEYS as given (the first key active), or
// BACKOFFICE_MASTER_KEY as a one-key ring whose id is the key's fingerprint, as it always was.
func masterRing(cfg Config) (*secrets.Ring, error) {
	var keys []secrets.Key
	switch {
	case cfg.MasterKeys != "":
		var err error
		if keys, err = secrets.ParseKeyRing(string(cfg.MasterKeys)); err != nil {
			return nil, fmt.Errorf("BACKOFFICE_MASTER_KEYS: %w", err)
		}
	case cfg.MasterKey != "":
		key, err := secrets.ParseMasterKey(string(cfg.MasterKey))
		if err != nil {
			return nil, fmt.Errorf("BACKOFFICE_MASTER_KEY: %w", err)
		}
		keys = []secrets.Key{key}
	default:
		return nil, errNoMasterKey
	}
	return secrets.NewRing(keys...)
}

func runImport(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("import", env)
	cfg.databaseFlags(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: import takes one FILE (or - for standard input)", ErrUsage)
	}
	ring, err := masterRing(cfg)
	if err != nil {
		return err
	}
	n, err := importFile(ctx, cfg, pos[0], env.Stdin, ring)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "imported %d records from %s\n", n, pos[0])
	return nil
}

func importFile(ctx context.Context, cfg Config, name string, stdin io.Reader, ring *secrets.Ring) (int, error) {
	in, closeIn, err := openInput(name, stdin)
	if err != nil {
		return 0, err
	}
	defer closeIn()
	ds, err := dataset.Read(in)
	if err != nil {
		return 0, fmt.Errorf("import %s: %w", name, err)
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	stats, err := st.Import(ctx, ds, ring)
	if err != nil {
		return 0, fmt.Errorf("import %s: %w (nothing was imported)", name, err)
	}
	return stats.Records, nil
}

func openInput(name string, stdin io.Reader) (io.Reader, func(), error) {
	if name == "-" {
		return stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

func runExport(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("export", env)
	cfg.databaseFlags(fs)
	withSecrets := fs.Bool("include-secrets", false, "include plaintext SSNs (needs the master key)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: export takes one FILE (or - for standard output)", ErrUsage)
	}
	var ring *secrets.Ring
	if *withSecrets {
		if ring, err = masterRing(cfg); err != nil {
			return err
		}
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	ds, err := st.Export(ctx, ring)
	if err != nil {
		return err
	}
	return writeOutput(pos[0], env.Stdout, func(w io.Writer) error { return dataset.Write(w, ds) })
}

// writeOutput writes to a temporary file renamed into place, so a failed export never leaves a
// half-written file under the requested name.
func writeOutput(name string, stdout io.Writer, write func(io.Writer) error) error {
	if name == "-" {
		return write(stdout)
	}
	tmp, err := os.CreateTemp(dirOf(name), ".export-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}

func dirOf(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			return name[:i+1]
		}
	}
	return "."
}
