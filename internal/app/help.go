package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"backoffice/internal/secrets"
)

// commandDoc is what help says about one command: how to call it, what it does, and an example
// that works as printed (next to a running `serve --demo` where it needs a database).
type commandDoc struct {
	name     string // as typed: "serve", "apikey create"
	synopsis string // what follows the name in the usage line
	summary  string // one line, for the command list
	details  string // more, for the command's own help; optional
	example  string
}

// demoFlagText is what --demo means to every command but serve.
const demoFlagText = "use the database and development master key of 'serve --demo' in ./" + demoDir + "/ (run it from the same directory)"

// serveVariablesText lists the variables serve reads that no flag stands for: secrets, which a
// command line would show to every user of the machine, and the settings deployments set once.
const serveVariablesText = `  BACKOFFICE_MASTER_KEY             base64 of 32 random bytes; make one: head -c 32 /dev/urandom | base64
  BACKOFFICE_MASTER_KEYS            a key ring instead, for rotation: id:base64key,… (the first seals)
  BACKOFFICE_GATEWAY_TOKEN          sent to the gateway as Authorization: Bearer …
  BACKOFFICE_MASTER_KEY_FILE, BACKOFFICE_MASTER_KEYS_FILE, BACKOFFICE_GATEWAY_TOKEN_FILE
                                    the same three, read from a file
  BACKOFFICE_AUDIT_CHECKPOINTS      the file serve appends signed audit checkpoints to
  BACKOFFICE_AUDIT_ORIGIN           the audit log's name in its checkpoints (default backoffice.local/audit)
  BACKOFFICE_AUDIT_WITNESSES        a witness policy file (c2sp.org/tlog-policy): witnesses cosign each checkpoint
  BACKOFFICE_AUDIT_RETENTION        how long audit events are kept before audit prune may remove them (default 12months)
  BACKOFFICE_DB_MAX_OPEN_CONNS, BACKOFFICE_DB_MAX_IDLE_CONNS
                                    database connections per process, and kept idle
  BACKOFFICE_DB_CONN_MAX_LIFETIME, BACKOFFICE_DB_CONN_MAX_IDLE_TIME
                                    close a connection this long after it opened, or idle
  OTEL_EXPORTER_OTLP_ENDPOINT       OpenTelemetry collector for traces (the other OTEL_* apply)`

var commandDocs = []commandDoc{
	{name: "serve", synopsis: "[--demo] [flags]", summary: "run the HTTP API (applies pending migrations first)",
		details: "Serves until SIGINT or SIGTERM, then drains in-flight requests and exits 0: it waits up to 30 s, or the\n" +
			"gateway budget (BACKOFFICE_GATEWAY_TIMEOUT) + 10 s when that is longer, and past that still for a push\n" +
			"that holds a lease, until it has written its merchant note.\n" +
			"With --demo it needs no configuration: an embedded SQLite database and a development master key in\n" +
			"./" + demoDir + "/, the demo dataset when the database is empty, and an in-process gateway simulator.\n" +
			"\n" +
			"Variables without a flag (README.md, docs/operations-guide.md):\n" + serveVariablesText,
		example: "backoffice serve --demo\nBACKOFFICE_DATABASE_URL=postgres://db.internal/backoffice BACKOFFICE_MASTER_KEY_FILE=/run/secrets/master.key backoffice serve --addr :8080"},
	{name: "import", synopsis: "FILE|- [flags]", summary: "add a dataset file's records, all or nothing",
		details: "Checks every record and reference first; on any error nothing is imported. - reads standard input. " +
			"With --upsert, a stored id is replaced whole and the file's deletes key removes records (docs/dataset.md).",
		example: "backoffice export --demo /tmp/demo.json && backoffice import --database-url sqlite:/tmp/copy.db /tmp/demo.json"},
	{name: "export", synopsis: "FILE|- [--include-secrets] [flags]", summary: "write the whole database as a dataset file",
		details: "A file is written with mode 0600 and renamed into place whole; - writes standard output.\n" +
			"SSNs are left out unless --include-secrets (which needs the master key); credentials never leave.",
		example: "backoffice export --demo -"},
	{name: "copy", synopsis: "--to URL [flags]", summary: "copy the whole database into an empty one, SQLite or PostgreSQL",
		details: "Moves a deployment between engines: every record, credential hashes, sealed SSNs as they are (no plaintext,\n" +
			"no master key needed), the audit trail with its chain and genesis (the same checkpoints file goes on\n" +
			"verifying), idempotency keys and push state. The target is migrated first (a SQLite file is made when\n" +
			"missing) and must hold no records. One transaction on the target: all or nothing, so a copy cut short is\n" +
			"run again. Stop serve first (what it writes after the copy began stays behind). See docs/scale.md.",
		example: "backoffice copy --to 'postgres://backoffice@db.internal:5432/backoffice?sslmode=verify-full'\nbackoffice copy --demo --to sqlite:/tmp/demo-copy.db"},
	{name: "gateway-sim", synopsis: "[flags]", summary: "run the device gateway simulator",
		example: "backoffice gateway-sim --addr 127.0.0.1:8090 --failure-rate 0.5 --latency 200ms"},
	{name: "apikey", synopsis: "COMMAND [flags]", summary: "issue, list and revoke API keys",
		example: "backoffice apikey list --demo"},
	{name: "apikey create", synopsis: "--user ID [--expires 90d|DATE] [--name TEXT] [flags]", summary: "issue an API key; prints it once",
		details: "The key alone goes to standard output (KEY=$(backoffice apikey create …) captures it); only its hash\n" +
			"and its public prefix are stored.",
		example: "backoffice apikey create --demo --user 00000000-0000-4000-8000-000000000101 --name laptop --expires 90d"},
	{name: "apikey list", synopsis: "[--user ID] [--prefix PREFIX] [flags]", summary: "list API keys (never the keys themselves)",
		example: "backoffice apikey list --demo --user 00000000-0000-4000-8000-000000000101"},
	{name: "apikey revoke", synopsis: "ID [flags]", summary: "revoke an API key, at once on every replica",
		example: "backoffice apikey revoke --demo 00000000-0000-4000-8000-000000000112"},
	{name: "session", synopsis: "COMMAND [flags]", summary: "issue, list and revoke session tokens",
		example: "backoffice session list --demo"},
	{name: "session create", synopsis: "--user ID [--ttl 24h] [flags]", summary: "issue a session token; prints it once",
		example: "backoffice session create --demo --user 00000000-0000-4000-8000-000000000101 --ttl 8h"},
	{name: "session list", synopsis: "[--user ID] [flags]", summary: "list sessions (never their tokens)",
		example: "backoffice session list --demo"},
	{name: "session revoke", synopsis: "ID [flags]", summary: "revoke a session",
		example: "backoffice session revoke --demo 00000000-0000-4000-8000-000000000121"},
	{name: "user", synopsis: "COMMAND [flags]", summary: "create, list, disable and enable users, grant and withdraw permissions",
		details: "For deployments without an upstream system that syncs users: users made here are records like\n" +
			"imported ones, and a later import --upsert whose file holds the same id replaces them whole\n" +
			"(docs/dataset.md).",
		example: "backoffice user list --demo"},
	{name: "user create", synopsis: "--email EMAIL [--partner ID] [--permission P]... [flags]", summary: "create a user; prints its id",
		details: "The id alone goes to standard output (ID=$(backoffice user create …) captures it). Without --partner the\n" +
			"user is staff and sees every partner's objects; audit_events.read is staff's alone. Give the user a\n" +
			"credential with apikey create or session create.",
		example: "backoffice user create --demo --email ana@demo.example --permission sam_action_logs.read --permission service_acceptance.read"},
	{name: "user list", synopsis: "[flags]", summary: "list users with their partner, permissions and state",
		example: "backoffice user list --demo"},
	{name: "user disable", synopsis: "ID [flags]", summary: "refuse every credential of a user, from the next request on",
		details: "The user's keys and sessions stay as they are, refused while the user is disabled; user enable lets them in again.",
		example: "backoffice user disable --demo 00000000-0000-4000-8000-000000000102"},
	{name: "user enable", synopsis: "ID [flags]", summary: "accept a disabled user's credentials again",
		example: "backoffice user enable --demo 00000000-0000-4000-8000-000000000102"},
	{name: "user grant", synopsis: "ID PERMISSION... [flags]", summary: "add permissions to a user",
		example: "backoffice user grant --demo 00000000-0000-4000-8000-000000000102 service_acceptance.read"},
	{name: "user withdraw", synopsis: "ID PERMISSION... [flags]", summary: "take permissions from a user (the opposite of grant)",
		details: "A user who holds * keeps every permission until * itself is withdrawn.",
		example: "backoffice user withdraw --demo 00000000-0000-4000-8000-000000000102 sam_action_logs.read"},
	{name: "keys", synopsis: "COMMAND [flags]", summary: "inspect and rotate the master keys that seal SSNs",
		example: "backoffice keys status --demo"},
	{name: "keys status", synopsis: "[flags]", summary: "say what still needs each master key, and list weak credentials",
		details: "For each key id, the SSNs sealed under it; for each key of the ring but the active one, what else still needs\n" +
			"it (audit links not yet anchored under the active key, the audit chain's genesis seal, the newest prune note,\n" +
			"the newest checkpoint in BACKOFFICE_AUDIT_CHECKPOINTS), or that nothing does and it can leave the ring; the key\n" +
			"ids the audit trail names that the ring lacks. It also says whether every usable API key and session carries\n" +
			fmt.Sprint(secrets.MinCredentialBits) + " random bits, listing the weak credentials that do not.\n" +
			"Exits 1 when SSNs are sealed under a key missing from the ring (their decrypt answers 500), when the audit\n" +
			"trail names a key missing from the ring that no anchor covers (links, the genesis, the newest prune note:\n" +
			"audit verify says whether it was altered), or when weak credentials are usable and serve would refuse them.\n" +
			"serve and import do not start with such a ring: they refuse, naming the key ids, before writing anything.",
		example: "backoffice keys status --demo"},
	{name: "keys rewrap", synopsis: "[--batch N] [flags]", summary: "re-encrypt every SSN under the active master key",
		details: "Safe while serving and resumable: each batch is one transaction. It first verifies the whole audit trail (as\n" +
			"audit verify, with BACKOFFICE_AUDIT_CHECKPOINTS) and refuses, changing nothing, when it does not verify. Then it\n" +
			"seals the trail's genesis and anchors the trail under the active key; after the SSNs, it signs the newest\n" +
			"prune note anew under it, if the prune notes file beside the checkpoints holds it (else exit 3).",
		example: "backoffice keys rewrap --demo --batch 1000\nBACKOFFICE_MASTER_KEYS=new:…,old:… backoffice keys rewrap"},
	{name: "audit", synopsis: "COMMAND [flags]", summary: "read and verify the audit trail",
		example: "backoffice audit list --demo"},
	{name: "audit list", synopsis: "[--actor-user-id ID] [--target-id ID] [--action A] [--outcome O] [--from T] [--to T] [--format table|json] [--limit N] [flags]",
		summary: "list audit events, newest first",
		details: "The filters of GET /v1/audit-events, with the same rules. --format json writes one event per line.",
		example: "backoffice audit list --demo --action principal.decrypt --outcome granted --format json"},
	{name: "audit verify", synopsis: "[--checkpoints FILE]... [--head HASH] [--export FILE --public-key KEY...] [--limit-to-keys] [--witnesses FILE] [flags]", summary: "check the audit trail's hash chain and its signed checkpoints",
		details: "Checks every link from the chain's genesis, and the chain against the checkpoints serve signed\n" +
			"(BACKOFFICE_AUDIT_CHECKPOINTS and each --checkpoints file, one per replica), which catch a cut-off tail.\n" +
			"Exits 0 when it checked every event and checkpoint given and they hold, 1 naming the first bad event (or the\n" +
			"range a digest shows), 3 when it cannot check (a key or checkpoint missing, checkpoints under a key not\n" +
			"given, export events no checkpoint checked covers: it names the seqs proved and not proved), 2 on a usage\n" +
			"error. --limit-to-keys claims only what the keys given prove: exit 0 then covers the seqs its first line\n" +
			"names. With --export it checks an export against the checkpoints with public keys only: no master key,\n" +
			"no database. See docs/compliance.md.",
		example: "backoffice audit verify --demo\nbackoffice audit verify --export export.json --checkpoints checkpoints --public-key k…:…"},
	{name: "audit public-key", synopsis: "[--key-id ID] [--note] [flags]", summary: "print the public key that checks the audit checkpoints",
		details: "Prints KEYID:BASE64, the Ed25519 public key derived from the active master key (or --key-id's): give it to auditors.\n" +
			"With --note, the verifier key of golang.org/x/mod/sumdb/note (ORIGIN+HASH+BASE64, named by\n" +
			"BACKOFFICE_AUDIT_ORIGIN), which checks the checkpoints, signed notes, with note.Open.",
		example: "backoffice audit public-key --demo\nbackoffice audit public-key --demo --note"},
	{name: "audit prove", synopsis: "(EVENT-ID | --target-id ID) [--checkpoint FILE] [--out FILE] [flags]",
		summary: "write an audit event's proof (c2sp.org/tlog-proof@v1), or an object's complete history",
		details: "Writes what GET /v1/audit-events/{id}/proof answers: the event beside its proof of inclusion in the trail's\n" +
			"Merkle tree against the signed checkpoint --checkpoint holds (as GET /v1/audit-log/checkpoint serves it),\n" +
			"by default the newest note of BACKOFFICE_AUDIT_CHECKPOINTS.\n" +
			"With --target-id, the object's complete history, one JSON file {\"targetId\", \"checkpoint\", \"tags\": [{\"keyId\",\n" +
			"\"tag\"}], \"proofs\": [...]}: its subject tag under each master key of the ring and of its events (the tags are\n" +
			"revealed: give the file to whom may see the object's history) and a proof for every event about it, oldest\n" +
			"first; it refuses when the checkpoint does not cover them all, or an event's key is not in the ring. An\n" +
			"auditor checks the file with a program of their own, and from the tiles that it holds every leaf carrying\n" +
			"those tags (docs/examples/auditcheck -complete; docs/compliance.md).",
		example: "backoffice audit prove --checkpoint checkpoint.txt 00000000-0000-4000-8000-000000000901\n" +
			"backoffice audit prove --checkpoint checkpoint.txt --target-id 00000000-0000-4000-8000-000000000401 --out subject.json"},
	{name: "audit prune", synopsis: "--before (SEQ | TIME) --archive FILE [flags]",
		summary: "archive the audit events older than the retention policy, then remove them under a signed record",
		details: "Prunes the events below --before (a seq, the first kept; or an RFC 3339 time, the first event at or after it\n" +
			"kept). It verifies the whole trail against BACKOFFICE_AUDIT_CHECKPOINTS, writes the events with their entry\n" +
			"bundles, hash tiles and the newest checkpoint to the new zip --archive (read back and checked), appends a\n" +
			"prune note signed with the checkpoint key beside the checkpoints (FILE.pruned), then records the note and\n" +
			"removes the events in one transaction. The tree's hashes stay: proofs of kept events still verify, and\n" +
			"audit verify reports \"pruned by policy below N\". It refuses, changing nothing, without --archive, past the\n" +
			"newest signed checkpoint, within BACKOFFICE_AUDIT_RETENTION (default 12months; 90 days at least), or when\n" +
			"the trail does not verify. See docs/compliance.md, \"Retention\".",
		example: "backoffice audit prune --demo --before 2025-12-01T00:00:00Z --archive audit-2025.zip"},
	{name: "version", synopsis: "", summary: "print which build this is (also: backoffice --version)",
		details: "Module version, commit and its time, Go version, as the build recorded them; the same as the\n" +
			"backoffice_build_info metric and the start-up log line. A build records its commit when made from a git\n" +
			"checkout with go build -buildvcs=true ./cmd/backoffice; otherwise the commit shows as unknown.",
		example: "backoffice version"},
	{name: "help", synopsis: "[COMMAND]", summary: "print help about a command",
		example: "backoffice help apikey create"},
}

func findDoc(name string) (commandDoc, bool) {
	for _, d := range commandDocs {
		if d.name == name {
			return d, true
		}
	}
	return commandDoc{}, false
}

// subcommands lists the commands of a group such as apikey.
func subcommands(group string) []commandDoc {
	var out []commandDoc
	for _, d := range commandDocs {
		if strings.HasPrefix(d.name, group+" ") {
			out = append(out, d)
		}
	}
	return out
}

func isHelpArg(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

// asksForHelp tells whether a help flag comes before any "--". It is only a guess (a flag's value
// may be "-h"), used when the configuration is too broken to parse the command line with.
func asksForHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a != "help" && isHelpArg(a) {
			return true
		}
	}
	return false
}

// commandPath is the command the arguments name, as far as it is known: "apikey create",
// "apikey" (a group with an unknown or missing subcommand) or "" (no known command).
func commandPath(args []string) string {
	if len(args) == 0 {
		return ""
	}
	if _, ok := findDoc(args[0]); !ok {
		return ""
	}
	if len(args) > 1 {
		if _, ok := findDoc(args[0] + " " + args[1]); ok {
			return args[0] + " " + args[1]
		}
	}
	return args[0]
}

// helpRequest is what a command returns when asked for its help; Run prints the help.
type helpRequest struct {
	name string
	fs   *flag.FlagSet // the command's flags; nil for a group such as apikey
}

func (h *helpRequest) Error() string { return h.name + ": help requested" }

// usageError is a command line that could not be understood: main exits 2 on it.
type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == ErrUsage }

func usagef(format string, a ...any) error { return &usageError{msg: fmt.Sprintf(format, a...)} }

// withHelpPointer names the command a usage error is about and where its help is.
func withHelpPointer(path string, err error) error {
	if path == "" {
		return fmt.Errorf("%w (see 'backoffice --help')", err)
	}
	return fmt.Errorf("%s: %w (see 'backoffice %s --help')", path, err, path)
}

// flagError turns the flag package's message into one line in the tool's words: an unknown flag
// as it was typed, any other flag as --name, and a bad value the way the BACKOFFICE_* variables
// report theirs (`--batch: "x" is not a whole number`).
func flagError(fs *flag.FlagSet, err error, args []string) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return unknownFlag(fs, typedFlag(name, args), name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return usagef("--%s needs a value", name)
	}
	if m := badFlagValue.FindStringSubmatch(msg); m != nil {
		value, name, reason := m[1], m[2], m[3]
		if f := fs.Lookup(name); f != nil {
			if want := wantedValue(f); want != "" {
				return usagef("--%s: %s is not %s", name, value, want)
			}
		}
		return usagef("--%s: %s", name, reason)
	}
	return usagef("%s", msg)
}

// flagsFor names, for flags users reach for that are not ours, the flag that does the job.
var flagsFor = map[string]string{"port": "addr", "listen": "addr", "host": "addr", "bind": "addr"}

// unknownFlag refuses a flag the command does not have, naming the one that was probably meant:
// the flag that does its job (--port: the listen address is --addr, or its variable), or a
// flag of the command spelled nearly alike.
func unknownFlag(fs *flag.FlagSet, typed, name string) error {
	if f := fs.Lookup(flagsFor[name]); f != nil {
		hint := "--" + f.Name + " HOST:PORT"
		if v := flagVariable(f); v != "" {
			hint += " or " + v
		}
		return usagef("unknown flag %s: the listen address, host and port, is %s (e.g. --%s 127.0.0.1:9090)", typed, hint, f.Name)
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if s := closest(name, names); s != "" {
		return usagef("unknown flag %s; did you mean --%s?", typed, s)
	}
	return usagef("unknown flag %s", typed)
}

// flagVariable is the BACKOFFICE_* variable a flag's usage names as its own, at its end: "(BACKOFFICE_ADDR)".
func flagVariable(f *flag.Flag) string {
	if m := usageVariable.FindStringSubmatch(f.Usage); m != nil {
		return m[1]
	}
	return ""
}

var usageVariable = regexp.MustCompile(`\((BACKOFFICE_[A-Z_]+)\)$`)

// badFlagValue matches the flag package's "invalid value" messages: the value as %q, the flag's
// name and what its Set said.
var badFlagValue = regexp.MustCompile(`^invalid (?:boolean )?value (".*") for (?:flag )?-([^:\s]+): (.*)$`)

// wantedValue says what a flag of a built-in type takes, for the flags whose own error says only
// "parse error"; "" for the flags whose Set says it in our words.
func wantedValue(f *flag.Flag) string {
	switch kind, _ := flag.UnquoteUsage(f); kind {
	case "int", "uint":
		return "a whole number"
	case "float":
		return "a number"
	case "duration":
		return "a duration such as 30s, 10m or 24h"
	case "":
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			return "true or false"
		}
	}
	return ""
}

// typedFlag finds how the user spelled flag name (-name or --name), for the error message.
func typedFlag(name string, args []string) string {
	for _, a := range args {
		bare, _, _ := strings.Cut(a, "=")
		if strings.TrimLeft(bare, "-") == name && strings.HasPrefix(bare, "-") {
			return bare
		}
	}
	return "--" + name
}

// help prints the help of the command path names (nothing: every command) to standard output.
// A command's flags are read from the command itself, asked for its help under the built-in
// configuration, so that defaults shown never come from the environment (the gateway token is
// the default of gateway-sim --token).
func help(ctx context.Context, env Env, args []string) error {
	path, err := helpPath(args)
	if err != nil {
		return withHelpPointer("help", err)
	}
	name := strings.Join(path, " ")
	if name == "" {
		fmt.Fprint(env.Stdout, usageText())
		return nil
	}
	doc, ok := findDoc(name)
	if !ok {
		return withHelpPointer("", unknownCommand(name, docNames()))
	}
	var fs *flag.FlagSet
	if len(subcommands(name)) == 0 && name != "help" {
		cfg, err := loadConfig(noEnvironment)
		if err != nil {
			return err
		}
		probe := env
		probe.Stdout, probe.Stderr = io.Discard, io.Discard
		var h *helpRequest
		if err := dispatch(ctx, probe, cfg, slices.Concat(path, []string{"--help"})); !errors.As(err, &h) {
			return fmt.Errorf("help %s: the command did not stop for --help: %v", name, err)
		}
		fs = h.fs
	}
	printHelp(env.Stdout, doc, fs)
	return nil
}

func noEnvironment(string) string { return "" }

// helpPath is the command help's arguments name. A help flag among them asks for the help of
// help itself when no command is named (`help --help`), and is ignored otherwise (`help serve
// -h`); any other flag is a mistake.
func helpPath(args []string) ([]string, error) {
	var path []string
	asked := false
	for _, a := range args {
		switch {
		case a != "help" && isHelpArg(a):
			asked = true
		case strings.HasPrefix(a, "-"):
			return nil, usagef("unknown flag %s", a)
		default:
			path = append(path, a)
		}
	}
	if asked && len(path) == 0 {
		path = []string{"help"}
	}
	return path, nil
}

// unknownCommand refuses a command name, suggesting the known one it is closest to, if any is
// close: a letter or two missed, added, swapped or mistyped.
func unknownCommand(name string, known []string) error {
	if s := closest(name, known); s != "" {
		return usagef("unknown command %q; did you mean %q?", name, s)
	}
	return usagef("unknown command %q", name)
}

// docNames is every command help knows, as typed: "serve", "apikey create".
func docNames() []string {
	var names []string
	for _, d := range commandDocs {
		names = append(names, d.name)
	}
	return names
}

// topCommands is the commands that may come first on the command line.
func topCommands() []string {
	var names []string
	for _, d := range commandDocs {
		if !strings.Contains(d.name, " ") {
			names = append(names, d.name)
		}
	}
	return names
}

// closest is the candidate nearest to name by edit distance, if it is near enough to be what
// was meant: at most two edits, and fewer than half of name's letters.
func closest(name string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if d := editDistance(name, c); d < bestDist && 2*d < len(name) {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b: insertions, deletions,
// substitutions and swaps of neighbours, one edit each.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

func printHelp(w io.Writer, doc commandDoc, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: backoffice %s %s\n\n%s.\n", doc.name, doc.synopsis, capitalize(doc.summary))
	if doc.details != "" {
		fmt.Fprintf(w, "%s\n", doc.details)
	}
	if subs := subcommands(doc.name); len(subs) > 0 {
		fmt.Fprintf(w, "\ncommands:\n")
		width := 8 // a name and at least one space more before its summary
		for _, s := range subs {
			width = max(width, len(strings.TrimPrefix(s.name, doc.name+" "))+1)
		}
		for _, s := range subs {
			fmt.Fprintf(w, "  %-*s %s\n", width, strings.TrimPrefix(s.name, doc.name+" "), s.summary)
		}
		fmt.Fprintf(w, "\nRun 'backoffice %s COMMAND --help' for a command's flags.\n", doc.name)
	}
	if fs != nil {
		fmt.Fprintf(w, "\nflags:\n")
		printFlags(w, fs)
	}
	fmt.Fprintf(w, "\nexample:\n")
	for _, line := range strings.Split(doc.example, "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
}

// printFlags is flag.PrintDefaults with the --name spelling the README and examples use.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if kind != "" {
			line += " " + kind
		}
		fmt.Fprintf(w, "%s\n        %s", line, usage)
		switch f.DefValue {
		case "", "0", "false", "0s":
		default:
			fmt.Fprintf(w, " (default %s)", defaultText(f, kind))
		}
		fmt.Fprintln(w)
	})
}

// defaultText is a flag's default as a user would type it: 24h rather than 24h0m0s, and no
// quotes unless it holds a space. (The flags' own values print info and 512MiB already.)
func defaultText(f *flag.Flag, kind string) string {
	v := f.DefValue
	if d, err := time.ParseDuration(v); err == nil && kind == "duration" {
		v = shortDuration(d)
	}
	if strings.ContainsAny(v, " \t") {
		return fmt.Sprintf("%q", v)
	}
	return v
}

// shortDuration drops the zero minutes and seconds time.Duration.String writes: 24h, 1h30m, 5m.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// usageText is the top-level help: every command, one line each.
func usageText() string {
	var b strings.Builder
	b.WriteString("usage: backoffice <command> [flags]\n\ncommands:\n")
	for _, d := range commandDocs {
		if len(subcommands(d.name)) > 0 {
			continue // its subcommands are listed
		}
		line := d.name + " " + d.synopsis
		if len(line) > 26 {
			fmt.Fprintf(&b, "  %s\n  %-26s %s\n", line, "", d.summary)
			continue
		}
		fmt.Fprintf(&b, "  %-26s %s\n", line, d.summary)
	}
	b.WriteString(`
Run 'backoffice help COMMAND' or 'backoffice COMMAND --help' for a command's flags and an example.

The commands that open the database take --demo: the database and development master key that
'backoffice serve --demo' keeps in ./` + demoDir + `/, so they work beside the running demo.
The apikey, session, user and keys commands write audit events; --actor USERID names the user to record
(default: the system actor 00000000-0000-0000-0000-000000000000). See docs/credentials.md.

Configuration comes from BACKOFFICE_* variables (see README.md); flags override them.
`)
	return b.String()
}
