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
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"backoffice/internal/auditlog"
	"backoffice/internal/checkpoint"
	"backoffice/internal/dataset"
	"backoffice/internal/jsonlog"
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

// ErrUsage marks a command line that could not be understood.
var ErrUsage = errors.New("usage")

// Run runs one command until it is done or ctx is cancelled (SIGINT/SIGTERM in main). Help
// goes to standard output and is not an error; a command line that cannot be understood is an
// error that wraps ErrUsage, naming the command and where its help is.
func Run(ctx context.Context, env Env) error {
	args := env.Args
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, usageText())
		return withHelpPointer("", usagef("no command given"))
	}
	if isHelpArg(args[0]) {
		return help(ctx, env, args[1:])
	}
	if isVersionFlag(args[0]) {
		args = append([]string{"version"}, args[1:]...)
	}
	if commandPath(args) == "" {
		return withHelpPointer("", unknownCommand(args[0], topCommands()))
	}
	cfg, err := loadConfig(env.Getenv)
	if err != nil && args[0] != "version" {
		if asksForHelp(args) {
			// Help needs no configuration: a broken one must not hide how to fix it.
			return help(ctx, env, strings.Fields(commandPath(args)))
		}
		return err
	}
	err = dispatch(ctx, env, cfg, args)
	var h *helpRequest
	switch {
	case errors.As(err, &h):
		return help(ctx, env, strings.Fields(h.name))
	case errors.Is(err, ErrUsage):
		return withHelpPointer(commandPath(args), err)
	}
	return err
}

// Report writes err, if any, on one line of stderr and returns the process's exit status, as
// main uses it: 0 without an error, 2 for a command line that could not be understood (as the Go
// tools do), 3 for an audit verify that cannot check (a key or checkpoint missing), 1 for anything
// else.
func Report(stderr io.Writer, err error) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "backoffice:", err)
	switch {
	case errors.Is(err, ErrUsage):
		return 2
	case errors.Is(err, ErrCannotCheck):
		return 3
	}
	return 1
}

// dispatch runs the command args name.
func dispatch(ctx context.Context, env Env, cfg Config, args []string) error {
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return runServe(ctx, env, cfg, rest)
	case "import":
		return runImport(ctx, env, cfg, rest)
	case "export":
		return runExport(ctx, env, cfg, rest)
	case "copy":
		return runCopy(ctx, env, cfg, rest)
	case "gateway-sim":
		return runGatewaySim(ctx, env, cfg, rest)
	case "apikey":
		return runAPIKey(ctx, env, cfg, rest)
	case "session":
		return runSession(ctx, env, cfg, rest)
	case "user":
		return runUser(ctx, env, cfg, rest)
	case "keys":
		return runKeys(ctx, env, cfg, rest)
	case "audit":
		return runAudit(ctx, env, cfg, rest)
	case "version":
		return runVersion(ctx, env, cfg, rest)
	}
	return usagef("unknown command %q", cmd)
}

// runFunc runs one command with the arguments that follow its name.
type runFunc func(ctx context.Context, env Env, cfg Config, args []string) error

// runGroup runs the subcommand of a group such as apikey; a group asked for help lists its
// subcommands.
func runGroup(ctx context.Context, env Env, cfg Config, group string, args []string, subs map[string]runFunc) error {
	if len(args) == 0 {
		return usagef("missing command: want %s", subcommandNames(group))
	}
	if isHelpArg(args[0]) {
		return &helpRequest{name: group}
	}
	run, ok := subs[args[0]]
	if !ok {
		if s := closest(args[0], strings.Split(subcommandNames(group), ", ")); s != "" {
			return usagef("unknown command %q; did you mean %q?", args[0], s)
		}
		return usagef("unknown command %q: want %s", args[0], subcommandNames(group))
	}
	return run(ctx, env, cfg, args[1:])
}

func subcommandNames(group string) string {
	var names []string
	for _, d := range subcommands(group) {
		names = append(names, strings.TrimPrefix(d.name, group+" "))
	}
	return strings.Join(names, ", ")
}

// newFlagSet makes a command's flag set. It prints nothing itself: parseArgs turns a help
// request into help on standard output and a mistake into one line on standard error.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseNoArgs parses the flags of a command that takes no positional arguments.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	pos, err := parseArgs(fs, args)
	if err == nil && len(pos) != 0 {
		err = usagef("unexpected argument %q: it takes no arguments", pos[0])
	}
	return err
}

// parseArgs parses flags that may come before or after the positional arguments.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, &helpRequest{name: fs.Name(), fs: fs}
			}
			return nil, flagError(fs, err, args)
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
	return slog.New(jsonlog.New(w, level))
}

// serveLogDelay is how long serve's lines below warning level may wait to be written together
// (jsonlog.NewDelayed): every request logs one, and writing each alone cost more than making it.
const serveLogDelay = 10 * time.Millisecond

// newServeLogger is serve's logger: newLogger's lines, written in batches; flush writes what
// waits, before serve returns.
func newServeLogger(w io.Writer, level slog.Level) (log *slog.Logger, flush func()) {
	h := jsonlog.NewDelayed(w, level, serveLogDelay)
	return slog.New(h), func() { _ = h.Flush() }
}

// openStore opens an existing database with the configured pool and applies pending migrations.
// A SQLite file that does not exist is an error naming it: a mistyped path must not leave an
// empty database behind.
func openStore(ctx context.Context, cfg Config, ring *secrets.Ring) (*store.Store, error) {
	return openMigrated(ctx, cfg, ring, store.MustExist())
}

// createStore is openStore for the command that makes a database when there is none and appends
// to the audit trail under the ring's active key, import (see openContinuing), on a trail whose
// tables are what the migrations made (refuseHeldTrail).
func createStore(ctx context.Context, cfg Config, ring *secrets.Ring) (*store.Store, error) {
	st, _, err := openContinuing(ctx, cfg, ring, "import")
	if err != nil {
		return nil, err
	}
	if err := refuseHeldTrail(ctx, st, "import"); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// openContinuing is openSealed for serve and import, which seal SSNs or link audit events under
// the ring: it refuses a ring that lacks a key the data needs (checkRingHolds) before it writes
// anything. On a database whose schema is current the check comes before the migrations (then
// none to apply) and the genesis's sealing; a database with migrations to apply is migrated
// first, as the check reads the schema they make.
func openContinuing(ctx context.Context, cfg Config, ring *secrets.Ring, what string) (*store.Store, auditlog.GenesisOpening, error) {
	return openChecked(ctx, cfg, ring, func(st *store.Store, migrated bool) error {
		err := checkRingHolds(ctx, st, ring, true)
		switch {
		case err != nil && migrated:
			return fmt.Errorf("%s refused (it applied the schema's migrations, and wrote nothing else): %w", what, err)
		case err != nil:
			return fmt.Errorf("%s refused, nothing was written: %w", what, err)
		}
		return nil
	})
}

// openMigrated opens and migrates the store. ring, when not nil, is what the store links audit
// events with; a store without one writes no events (auditlog.ErrNoChainSigner), which suits the
// commands that only read.
func openMigrated(ctx context.Context, cfg Config, ring *secrets.Ring, opts ...store.Option) (*store.Store, error) {
	st, _, err := openSealed(ctx, cfg, ring, opts...)
	return st, err
}

// openSealed is openMigrated, which also seals a genesis the migration left unsealed when given
// the ring (see store.SealUnsealedAuditGenesis): after a walk of the whole trail, against the
// configured checkpoints, proves where the chain begins; on trust only while no checkpoint
// exists. serve logs what it did.
func openSealed(ctx context.Context, cfg Config, ring *secrets.Ring, opts ...store.Option) (*store.Store, auditlog.GenesisOpening, error) {
	return openChecked(ctx, cfg, ring, nil, opts...)
}

// openChecked is openSealed, with check (when not nil) run on the store before it writes.
func openChecked(ctx context.Context, cfg Config, ring *secrets.Ring, check func(st *store.Store, migrated bool) error, opts ...store.Option) (*store.Store, auditlog.GenesisOpening, error) {
	st, err := openUnsealed(ctx, cfg, ring, check, opts...)
	if err != nil || ring == nil {
		return st, auditlog.GenesisOpening{}, err
	}
	g, err := st.SealUnsealedAuditGenesis(ctx, ring, func() ([]auditlog.ChainExpect, bool, error) {
		// A file holding checkpoints gives expects, or an error: none is under a key of the ring,
		// or some after the last that is are not (configuredExpects). So no expects is no
		// checkpoint yet. serve logs the torn lines as it reads the file.
		expects, _, err := configuredExpects(cfg, ring)
		return expects, len(expects) == 0, err
	})
	if err != nil {
		st.Close()
		return nil, g, err
	}
	return st, g, nil
}

// configuredExpects are the checkpoints of the configured file (BACKOFFICE_AUDIT_CHECKPOINTS, or
// the demo's) that are signed under a key of the ring, as what the chain must hold: none when no
// file is configured or it is missing. It is what a seal or an anchor is checked against, so a
// check that would leave part of the file out refuses: a file that does not hold together, or
// checkpoints after the last one the ring vouches for (signed under a key it does not hold), is
// an ErrCannotCheck. notes name the torn lines left out.
func configuredExpects(cfg Config, ring *secrets.Ring) (expects []auditlog.ChainExpect, notes []string, err error) {
	if cfg.AuditCheckpoints == "" {
		return nil, nil, nil
	}
	if _, err := os.Stat(cfg.AuditCheckpoints); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	keys, err := ringPublicKeys(ring)
	if err != nil {
		return nil, nil, err
	}
	expects, read, unvouched, err := fileExpects(cfg.AuditCheckpoints, keys)
	if err == nil && len(unvouched) > 0 {
		err = fmt.Errorf("%w: %s: add the key to the ring (BACKOFFICE_MASTER_KEYS)", ErrCannotCheck, unvouchedNote(cfg.AuditCheckpoints, unvouched))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("BACKOFFICE_AUDIT_CHECKPOINTS: %w", err)
	}
	return expects, tornNotes(read), nil
}

// lastCheckpoint is the newest checkpoint in the configured file (BACKOFFICE_AUDIT_CHECKPOINTS,
// or the demo's); ok is false when there is none (no file configured, or none yet).
func lastCheckpoint(cfg Config) (last checkpoint.Entry, ok bool, err error) {
	if cfg.AuditCheckpoints == "" {
		return last, false, nil
	}
	file, err := checkpoint.ReadFile(cfg.AuditCheckpoints)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return last, false, nil
	case err != nil:
		return last, false, fmt.Errorf("BACKOFFICE_AUDIT_CHECKPOINTS: %w", err)
	case len(file.Entries) == 0:
		return last, false, nil
	}
	return file.Entries[len(file.Entries)-1], true, nil
}

func openUnsealed(ctx context.Context, cfg Config, ring *secrets.Ring, check func(st *store.Store, migrated bool) error, opts ...store.Option) (*store.Store, error) {
	st, err := store.Open(ctx, cfg.DatabaseURL, append(opts, store.WithPool(cfg.Pool))...)
	if err != nil {
		return nil, err
	}
	if check != nil {
		// A database without the migrations' table (a new one) reads as pending.
		if pending, err := st.Pending(ctx); err == nil && pending == 0 {
			if err := check(st, false); err != nil {
				st.Close()
				return nil, err
			}
			check = nil
		}
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, err
	}
	if check != nil {
		if err := check(st, true); err != nil {
			st.Close()
			return nil, err
		}
	}
	if ring != nil {
		st.SetChainSigner(ring)
		// The audit tree is built for events written before it (an upgraded database, an
		// import), before anything is appended onto it.
		if _, err := st.BuildAuditTree(ctx); err != nil {
			st.Close()
			return nil, err
		}
	}
	return st, nil
}

// masterRing builds the key ring: BACKOFFICE_MASTER_KEYS as given (the first key active), or
// BACKOFFICE_MASTER_KEY as a one-key ring whose id is the key's fingerprint, as it always was.
// With --demo and no key configured, the ring is the demo's development key.
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
	fs := newFlagSet("import")
	cfg.databaseFlags(fs)
	upsert := fs.Bool("upsert", false, "replace the stored records whose ids the file has, and delete the records of its deletes key")
	pos, err := cfg.parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one FILE (or - for standard input)")
	}
	ring, err := masterRing(cfg)
	if err != nil {
		return importFailed(pos[0], err)
	}
	p := startProgress(env.Stderr)
	c, err := importFile(ctx, cfg, pos[0], env.Stdin, ring, dataset.Options{Upsert: *upsert}, p)
	p.end()
	if err != nil {
		return importFailed(pos[0], err)
	}
	fmt.Fprint(env.Stdout, importSummary(pos[0], c, time.Since(p.start)))
	return nil
}

// importFailed is every failure of an import, whichever step it came from, ending alike: the
// import is all or nothing.
func importFailed(name string, err error) error {
	return fmt.Errorf("import %s: %w (nothing was imported)", name, err)
}

func importFile(ctx context.Context, cfg Config, name string, stdin io.Reader, ring *secrets.Ring, opts dataset.Options, p *importProgress) (dataset.Counts, error) {
	in, err := openInput(name, stdin)
	if err != nil {
		return dataset.Counts{}, err
	}
	defer in.close()
	p.setPhase("MB read", in.size, 1<<20, "checking the file")
	file, err := dataset.ReadFile(countingReader{in.r, p}, in.again)
	if err != nil {
		return dataset.Counts{}, err
	}
	st, err := createStore(ctx, cfg, ring)
	if err != nil {
		return dataset.Counts{}, err
	}
	defer st.Close()
	p.setPhase("records", int64(file.Records()), 1, "finishing and committing")
	opts.Progress = func(done int) { p.set(int64(done)) }
	return dataset.ImportFile(ctx, st, file, ring, opts)
}

// input is the file to import: read once through as a stream (r), and again from again, where
// the import reads its SAM logs a second time and counts an error's line and column.
type input struct {
	r     io.Reader
	again io.ReaderAt
	size  int64 // 0: not known
	close func()
}

// openInput opens the file to import. A regular file is read again from itself. Anything else
// (standard input, a named pipe, a process substitution) can be read only once: what is read is
// copied, as it is read, into a spool that leaves nothing behind (see spool).
func openInput(name string, stdin io.Reader) (*input, error) {
	in := &input{r: stdin, close: func() {}}
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		in.r, in.close = f, func() { f.Close() }
	}
	if f, ok := in.r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			// Read from where the file is at (standard input may have been read from already).
			if pos, err := f.Seek(0, io.SeekCurrent); err == nil {
				in.again, in.size = io.NewSectionReader(f, pos, fi.Size()-pos), fi.Size()-pos
				in.r = io.NewSectionReader(f, pos, fi.Size()-pos)
				return in, nil
			}
		}
	}
	sp, err := newSpool()
	if err != nil {
		in.close()
		return nil, fmt.Errorf("a copy of the input to read it again: %w", err)
	}
	closeIn := in.close
	in.r, in.again, in.close = io.TeeReader(in.r, sp), sp, func() { sp.Close(); closeIn() }
	return in, nil
}

func runExport(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("export")
	cfg.databaseFlags(fs)
	withSecrets := fs.Bool("include-secrets", false, "include plaintext SSNs (needs the master key)")
	pos, err := cfg.parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one FILE (or - for standard output)")
	}
	var ring *secrets.Ring
	if *withSecrets {
		if ring, err = masterRing(cfg); err != nil {
			return err
		}
	}
	st, err := openStore(ctx, cfg, ring)
	if err != nil {
		return err
	}
	defer st.Close()
	ds, err := dataset.Export(ctx, st, ring)
	if err != nil {
		return err
	}
	return writeOutput(pos[0], cfg.ownFiles(), env.Stdout, func(w io.Writer) error { return dataset.Write(w, ds) })
}

// writeOutput writes the output as a file (mode 0600) that is named only once it is whole and
// synced (createOutput), so a failed or killed export never leaves a half-written file under the
// requested name, nor (on Linux) a file of its own anywhere; and a crash of the machine that keeps
// the name does not leave an empty or short file there either.
func writeOutput(name string, own []string, stdout io.Writer, write func(io.Writer) error) error {
	if name == "-" {
		return write(stdout)
	}
	if err := notOwnFile(name, own); err != nil {
		return err
	}
	out, err := createOutput(dirOf(name))
	if err != nil {
		return err
	}
	if err := write(out); err != nil {
		out.abort()
		return err
	}
	return out.finish(name)
}

// notOwnFile refuses name when it is one of own (Config.ownFiles) that exists, however it is
// spelled (a link, a relative path: the same file).
func notOwnFile(name string, own []string) error {
	target, err := os.Stat(name)
	if err != nil {
		return nil // nothing there to replace (or nothing the rename could reach either)
	}
	for _, f := range own {
		if info, err := os.Stat(f); err == nil && os.SameFile(target, info) {
			return usagef("%s is a file of this configuration (%s): the output never replaces it; name another file", name, f)
		}
	}
	return nil
}

func dirOf(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			return name[:i+1]
		}
	}
	return "."
}
