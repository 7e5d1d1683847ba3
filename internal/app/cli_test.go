package app

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"backoffice/internal/secrets"
)

// runMain runs a command line as cmd/backoffice does: what it prints on standard output and
// standard error (main's error line included) and its exit status.
func runMain(getenv func(string) string, args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	err := Run(context.Background(), Env{Args: args, Getenv: getenv, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
	code = Report(&errOut, err)
	return out.String(), errOut.String(), code
}

// envOfMap reads variables from a map.
func envOfMap(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestHelpGoesToStdoutAndSucceeds(t *testing.T) {
	t.Chdir(t.TempDir())
	tests := []struct {
		args []string
		want []string // in standard output
	}{
		{[]string{"--help"}, []string{"usage: backoffice <command>", "apikey create --user ID", "keys rewrap", "--demo"}},
		{[]string{"-h"}, []string{"usage: backoffice <command>"}},
		{[]string{"help"}, []string{"usage: backoffice <command>"}},
		{[]string{"serve", "--help"}, []string{"usage: backoffice serve", "flags:", "--addr string", "(default 127.0.0.1:8080)", "--demo", "example:\n  backoffice serve --demo"}},
		// Defaults as users type them, as the README writes them.
		{[]string{"serve", "--help"}, []string{"--log-level value\n        debug, info, warn or error (BACKOFFICE_LOG_LEVEL) (default info)\n",
			"(BACKOFFICE_MEMORY_LIMIT) (default 512MiB)\n", "(BACKOFFICE_GATEWAY_TIMEOUT) (default 10s)\n"}},
		{[]string{"serve", "-h"}, []string{"usage: backoffice serve", "--rate-limit"}},
		{[]string{"help", "serve"}, []string{"usage: backoffice serve", "--gateway-url"}},
		{[]string{"import", "--help"}, []string{"usage: backoffice import FILE|-", "--demo", "--database-url"}},
		{[]string{"export", "x.json", "--help"}, []string{"usage: backoffice export", "--include-secrets"}},
		{[]string{"gateway-sim", "--help"}, []string{"usage: backoffice gateway-sim", "--failure-rate", "--latency"}},
		{[]string{"apikey", "--help"}, []string{"usage: backoffice apikey COMMAND", "create ", "list ", "revoke ", "example:"}},
		{[]string{"apikey", "-h"}, []string{"usage: backoffice apikey COMMAND"}},
		{[]string{"help", "apikey"}, []string{"usage: backoffice apikey COMMAND"}},
		{[]string{"apikey", "create", "--help"}, []string{"usage: backoffice apikey create --user ID", "--user string", "--expires", "--name", "--actor", "--demo", "example:"}},
		{[]string{"apikey", "create", "-h"}, []string{"usage: backoffice apikey create"}},
		{[]string{"help", "apikey", "create"}, []string{"usage: backoffice apikey create", "--user string"}},
		{[]string{"apikey", "list", "--help"}, []string{"--prefix"}},
		{[]string{"apikey", "revoke", "--help"}, []string{"usage: backoffice apikey revoke ID"}},
		{[]string{"session", "--help"}, []string{"usage: backoffice session COMMAND"}},
		{[]string{"session", "create", "--help"}, []string{"--ttl duration", "(default 24h)"}},
		{[]string{"keys", "--help"}, []string{"status ", "rewrap "}},
		// keys status says what still needs each key, not only its SSNs, and judges the credentials.
		{[]string{"keys", "status", "--help"}, []string{"usage: backoffice keys status", "Exits 1 when", "SSNs",
			"audit links not yet anchored", "genesis", "newest prune note", "newest checkpoint", "random bits", "weak credentials"}},
		{[]string{"keys", "--help"}, []string{"what still needs each master key", "weak credentials"}},
		{[]string{"keys", "rewrap", "-h"}, []string{"--batch int", "(default 500)"}},
		{[]string{"help", "help"}, []string{"usage: backoffice help [COMMAND]"}},
		{[]string{"help", "--help"}, []string{"usage: backoffice help [COMMAND]"}},
		{[]string{"help", "-h"}, []string{"usage: backoffice help [COMMAND]"}},
		{[]string{"--help", "help"}, []string{"usage: backoffice help [COMMAND]"}},
		{[]string{"help", "serve", "--help"}, []string{"usage: backoffice serve"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, code := runMain(noEnv, tt.args...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("help lacks %q:\n%s", w, out)
				}
			}
		})
	}
	if files, _ := os.ReadDir("."); len(files) != 0 {
		t.Errorf("help created %v", files)
	}
}

// Every command has help with an example, the same whichever way it is asked for.
func TestEveryCommandHasHelp(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, d := range commandDocs {
		path := strings.Fields(d.name)
		viaHelp, _, code := runMain(noEnv, append([]string{"help"}, path...)...)
		if code != 0 || !strings.HasPrefix(viaHelp, "usage: backoffice "+d.name+" ") || !strings.Contains(viaHelp, "\nexample:\n  backoffice ") {
			t.Errorf("help %s: exit %d:\n%s", d.name, code, viaHelp)
		}
		if d.name == "help" {
			continue
		}
		viaFlag, _, _ := runMain(noEnv, append(path, "--help")...)
		if viaFlag != viaHelp {
			t.Errorf("%s --help differs from help %s:\n%s\n---\n%s", d.name, d.name, viaFlag, viaHelp)
		}
	}
	// Help runs each command up to its flags: none may touch anything before that.
	if files, _ := os.ReadDir("."); len(files) != 0 {
		t.Errorf("help created %v", files)
	}
}

// The examples name real commands and flags: each parses up to a --help put after it.
func TestHelpExamplesParse(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, d := range commandDocs {
		for _, line := range strings.Split(d.example, "\n") {
			for _, cmd := range strings.Split(line, " && ") {
				words := strings.Fields(cmd)
				for len(words) > 0 && strings.Contains(words[0], "=") {
					words = words[1:] // VAR=value before the command
				}
				if len(words) == 0 || words[0] != "backoffice" {
					t.Errorf("%s: example %q does not run backoffice", d.name, cmd)
					continue
				}
				args := words[1:]
				if args[0] != "help" {
					args = append(args, "--help")
				}
				if _, errOut, code := runMain(noEnv, args...); code != 0 {
					t.Errorf("%s: example %q does not parse: %s", d.name, cmd, errOut)
				}
			}
		}
	}
}

// Help works when the configuration is broken: it is where to look for how to fix it.
func TestHelpDespiteBrokenConfiguration(t *testing.T) {
	broken := envOfMap(map[string]string{"BACKOFFICE_LOG_LEVEL": "loud"})
	out, errOut, code := runMain(broken, "serve", "--help")
	if code != 0 || !strings.HasPrefix(out, "usage: backoffice serve ") || errOut != "" {
		t.Errorf("serve --help with a broken configuration: exit %d, stderr %q:\n%s", code, errOut, out)
	}
	if _, errOut, code := runMain(broken, "keys", "status"); code != 1 || !strings.Contains(errOut, "BACKOFFICE_LOG_LEVEL") {
		t.Errorf("keys status with a broken configuration: exit %d, stderr %q", code, errOut)
	}
}

// Flag defaults in help are the built-in ones: the environment's values (a token, a database
// password) never show.
func TestHelpShowsNoConfiguredSecret(t *testing.T) {
	getenv := envOfMap(map[string]string{
		"BACKOFFICE_GATEWAY_TOKEN": "gateway-token-must-not-print",
		"BACKOFFICE_DATABASE_URL":  "postgres://u:password-must-not-print@db/backoffice",
	})
	for _, args := range [][]string{{"gateway-sim", "--help"}, {"serve", "--help"}, {"apikey", "create", "--help"}} {
		out, _, code := runMain(getenv, args...)
		if code != 0 || strings.Contains(out, "must-not-print") {
			t.Errorf("%v: exit %d, a configured secret in help:\n%s", args, code, out)
		}
	}
}

// A command line that cannot be understood is one line on standard error naming what is wrong
// and where help is, and exit status 2; nothing on standard output.
func TestUsageErrorsAreOneLine(t *testing.T) {
	t.Chdir(t.TempDir())
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `backoffice: unknown command "frobnicate" (see 'backoffice --help')`},
		{[]string{"--frob"}, `backoffice: unknown command "--frob" (see 'backoffice --help')`},
		{[]string{"help", "frobnicate"}, `backoffice: unknown command "frobnicate" (see 'backoffice --help')`},
		{[]string{"help", "apikey", "rotate"}, `backoffice: unknown command "apikey rotate" (see 'backoffice --help')`},
		{[]string{"serve", "--frob"}, `backoffice: serve: unknown flag --frob (see 'backoffice serve --help')`},
		{[]string{"serve", "-frob=1"}, `backoffice: serve: unknown flag -frob (see 'backoffice serve --help')`},
		{[]string{"serve", "extra"}, `backoffice: serve: unexpected argument "extra": it takes no arguments (see 'backoffice serve --help')`},
		{[]string{"import"}, `backoffice: import: want one FILE (or - for standard input) (see 'backoffice import --help')`},
		{[]string{"export", "a", "b"}, `backoffice: export: want one FILE (or - for standard output) (see 'backoffice export --help')`},
		{[]string{"gateway-sim", "--latency", "soon"}, `backoffice: gateway-sim: --latency: "soon" is not a duration such as 30s, 10m or 24h (see 'backoffice gateway-sim --help')`},
		// NaN fails every comparison, so "below 0 or above 1" alone would let it through. The
		// address cannot be listened on: a rate let through fails at once rather than serving.
		{[]string{"gateway-sim", "--addr", "no-such-address", "--failure-rate", "NaN"}, `backoffice: gateway-sim: --failure-rate must be a number from 0 to 1, not NaN (see 'backoffice gateway-sim --help')`},
		{[]string{"gateway-sim", "--addr", "no-such-address", "--failure-rate", "+Inf"}, `backoffice: gateway-sim: --failure-rate must be a number from 0 to 1, not +Inf (see 'backoffice gateway-sim --help')`},
		{[]string{"gateway-sim", "--addr", "no-such-address", "--failure-rate", "1.5"}, `backoffice: gateway-sim: --failure-rate must be a number from 0 to 1, not 1.5 (see 'backoffice gateway-sim --help')`},
		// Flag mistakes in the tool's words, the flag named --name whichever way it was typed.
		{[]string{"serve", "-addr"}, `backoffice: serve: --addr needs a value (see 'backoffice serve --help')`},
		{[]string{"serve", "--rate-burst", "x"}, `backoffice: serve: --rate-burst: "x" is not a whole number (see 'backoffice serve --help')`},
		{[]string{"serve", "--demo=maybe"}, `backoffice: serve: --demo: "maybe" is not true or false (see 'backoffice serve --help')`},
		{[]string{"serve", "--log-level", "loud"}, `backoffice: serve: --log-level: "loud" is not one of debug, info, warn, error (see 'backoffice serve --help')`},
		{[]string{"serve", "--rate-limit=fast"}, `backoffice: serve: --rate-limit: "fast" is not a rate such as 50, 0.5 or off (see 'backoffice serve --help')`},
		{[]string{"serve", "--memory-limit", "lots"}, `backoffice: serve: --memory-limit: "lots" is not a size such as 512MiB, 2GiB or off (see 'backoffice serve --help')`},
		{[]string{"help", "--frob"}, `backoffice: help: unknown flag --frob (see 'backoffice help --help')`},
		// A flag users reach for that is not ours names the one that does its job; a near miss, the flag meant.
		{[]string{"serve", "--port", "9090"}, `backoffice: serve: unknown flag --port: the listen address, host and port, is --addr HOST:PORT or BACKOFFICE_ADDR (e.g. --addr 127.0.0.1:9090) (see 'backoffice serve --help')`},
		{[]string{"gateway-sim", "-port=9090"}, `backoffice: gateway-sim: unknown flag -port: the listen address, host and port, is --addr HOST:PORT (e.g. --addr 127.0.0.1:9090) (see 'backoffice gateway-sim --help')`},
		{[]string{"serve", "--gatway-url", "x"}, `backoffice: serve: unknown flag --gatway-url; did you mean --gateway-url? (see 'backoffice serve --help')`},
		{[]string{"apikey", "list", "--port", "1"}, `backoffice: apikey list: unknown flag --port (see 'backoffice apikey list --help')`},
		// A near miss names what was meant.
		{[]string{"serv"}, `backoffice: unknown command "serv"; did you mean "serve"? (see 'backoffice --help')`},
		{[]string{"exprot", "-"}, `backoffice: unknown command "exprot"; did you mean "export"? (see 'backoffice --help')`},
		{[]string{"apikey", "craete"}, `backoffice: apikey: unknown command "craete"; did you mean "create"? (see 'backoffice apikey --help')`},
		{[]string{"help", "session", "lst"}, `backoffice: unknown command "session lst"; did you mean "session list"? (see 'backoffice --help')`},
		{[]string{"apikey"}, `backoffice: apikey: missing command: want create, list, revoke (see 'backoffice apikey --help')`},
		{[]string{"apikey", "rotate"}, `backoffice: apikey: unknown command "rotate": want create, list, revoke (see 'backoffice apikey --help')`},
		{[]string{"apikey", "create", "--frob"}, `backoffice: apikey create: unknown flag --frob (see 'backoffice apikey create --help')`},
		{[]string{"apikey", "create"}, `backoffice: apikey create: --user is required (see 'backoffice apikey create --help')`},
		{[]string{"session", "list", "extra"}, `backoffice: session list: unexpected argument "extra": it takes no arguments (see 'backoffice session list --help')`},
		{[]string{"keys", "frob"}, `backoffice: keys: unknown command "frob": want status, rewrap (see 'backoffice keys --help')`},
		{[]string{"keys", "rewrap", "--batch", "0"}, `backoffice: keys rewrap: --batch must be from 1 to 10000 (see 'backoffice keys rewrap --help')`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, code := runMain(noEnv, tt.args...)
			if code != 2 || out != "" || errOut != tt.want+"\n" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing and %q", code, out, errOut, tt.want)
			}
		})
	}
	if files, _ := os.ReadDir("."); len(files) != 0 {
		t.Errorf("refused command lines created %v", files)
	}
}

// Every flag's line in help is its name and, for a flag that takes one, a one-word kind of value:
// a backquoted word in a usage text would show there in place of the kind.
func TestHelpFlagLines(t *testing.T) {
	t.Chdir(t.TempDir())
	flagLine := regexp.MustCompile(`^  --[a-z0-9-]+( [A-Za-z]+)?$`)
	for _, d := range commandDocs {
		out, _, _ := runMain(noEnv, append([]string{"help"}, strings.Fields(d.name)...)...)
		_, flags, ok := strings.Cut(out, "\nflags:\n")
		if !ok {
			continue
		}
		flags, _, _ = strings.Cut(flags, "\n\nexample:")
		for _, line := range strings.Split(flags, "\n") {
			if strings.HasPrefix(line, "  --") && !flagLine.MatchString(line) {
				t.Errorf("help %s: flag line %q", d.name, line)
			}
		}
	}
}

// serve --help names every variable the README's configuration table has, with its flag or in
// the list of those without one.
func TestServeHelpNamesEveryVariable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(readme), "\n## Configuration\n")
	table, _, _ = strings.Cut(table, "\n## ")
	vars := regexp.MustCompile("`((?:BACKOFFICE|OTEL)_[A-Z_]+)`").FindAllStringSubmatch(table, -1)
	if len(vars) < 20 {
		t.Fatalf("found %d variables in the README's configuration section", len(vars))
	}
	out, _, code := runMain(noEnv, "serve", "--help")
	if code != 0 {
		t.Fatalf("serve --help: exit %d", code)
	}
	for _, v := range vars {
		if !regexp.MustCompile(`\b` + v[1] + `\b`).MatchString(out) {
			t.Errorf("serve --help does not name %s", v[1])
		}
	}
}

// A master key that is not base64 of 32 bytes is refused saying how to make one; hex is named.
func TestMasterKeyMessages(t *testing.T) {
	t.Chdir(t.TempDir())
	hexKey := strings.Repeat("9f", 32)
	for _, tc := range []struct{ key, want string }{
		{hexKey, "looks like hex (64 hex digits); want base64 of 32 random bytes (make one: head -c 32 /dev/urandom | base64)"},
		{"c2hvcnQ=", "decodes to 5 bytes; want base64 of 32 random bytes (make one: head -c 32 /dev/urandom | base64)"},
	} {
		_, errOut, code := runMain(envOfMap(map[string]string{"BACKOFFICE_MASTER_KEY": tc.key}), "import", "-")
		if code != 1 || !strings.Contains(errOut, "BACKOFFICE_MASTER_KEY: master key "+tc.want) {
			t.Errorf("import with key %q: exit %d, %s", tc.key, code, errOut)
		}
	}
}

// serve (and gateway-sim) on an address in use says so and names the settings that choose another.
func TestServeBusyAddress(t *testing.T) {
	t.Chdir(t.TempDir())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	getenv := envOfMap(map[string]string{"BACKOFFICE_MASTER_KEY": secrets.NewKey(), "BACKOFFICE_ADDR": ln.Addr().String(),
		"BACKOFFICE_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "b.db"), "BACKOFFICE_METRICS_ADDR": "off"})
	_, errOut, code := runMain(getenv, "serve")
	want := "backoffice: listen " + ln.Addr().String() + ": the address is in use (another serve, or a demo, may be running): stop it, or choose another address with --addr or BACKOFFICE_ADDR: "
	if code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant a line starting %q", code, errOut, want)
	}
	_, errOut, code = runMain(noEnv, "gateway-sim", "--addr", ln.Addr().String())
	want = "backoffice: listen " + ln.Addr().String() + ": the address is in use (another gateway simulator may be running): stop it, or choose another address with --addr: "
	if code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("gateway-sim: exit %d, stderr:\n%s\nwant a line starting %q", code, errOut, want)
	}
}

// With no command at all, the command list goes to standard error (exit 2), as the go command does.
func TestNoCommand(t *testing.T) {
	out, errOut, code := runMain(noEnv)
	if code != 2 || out != "" || !strings.HasPrefix(errOut, "usage: backoffice <command>") ||
		!strings.HasSuffix(errOut, "backoffice: no command given (see 'backoffice --help')\n") {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
}

func TestReport(t *testing.T) {
	tests := []struct {
		err  error
		code int
		line string
	}{
		{nil, 0, ""},
		{usagef("bad flag"), 2, "backoffice: bad flag\n"},
		{withHelpPointer("serve", usagef("bad flag")), 2, "backoffice: serve: bad flag (see 'backoffice serve --help')\n"},
		{errors.New("database is down"), 1, "backoffice: database is down\n"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if code := Report(&b, tt.err); code != tt.code || b.String() != tt.line {
			t.Errorf("Report(%v) = %d, %q; want %d, %q", tt.err, code, b.String(), tt.code, tt.line)
		}
	}
}

// Without a demo in the working directory, --demo is an error that says how to get one, and no
// database file appears.
func TestDemoFlagWithoutDemo(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, args := range [][]string{{"apikey", "list", "--demo"}, {"keys", "status", "--demo"}, {"export", "-", "--demo"},
		{"audit", "verify", "--demo"}, {"audit", "list", "--demo"}, {"audit", "public-key", "--demo"},
		{"audit", "prove", "--demo", "00000000-0000-4000-8000-000000000401"}} {
		_, errOut, code := runMain(noEnv, args...)
		if code != 1 || !strings.Contains(errOut, "--demo: no demo in ") || !strings.Contains(errOut, "start `backoffice serve --demo` in this directory first") {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}
	if files, _ := os.ReadDir("."); len(files) != 0 {
		t.Errorf("--demo without a demo created %v", files)
	}
}

// Every command that takes --demo (its help lists it) resolves it as it parses its command line,
// before anything else: without a demo, --demo alone is the error that says how to get one, never
// a command run on the configured database. serve makes the demo.
func TestEveryDemoFlagIsResolved(t *testing.T) {
	t.Chdir(t.TempDir())
	var checked int
	for _, d := range commandDocs {
		name := strings.Fields(d.name)
		if d.name == "serve" || len(subcommands(d.name)) > 0 {
			continue
		}
		if help, _, _ := runMain(noEnv, append(name, "--help")...); !strings.Contains(help, "-demo") {
			continue
		}
		checked++
		if _, errOut, code := runMain(noEnv, append(name, "--demo")...); code != 1 || !strings.Contains(errOut, "--demo: no demo in ") {
			t.Errorf("%s --demo: exit %d: %s", d.name, code, errOut)
		}
	}
	if checked < 10 {
		t.Errorf("%d commands list --demo in their help; want every command that opens the database", checked)
	}
	if files, _ := os.ReadDir("."); len(files) != 0 {
		t.Errorf("--demo without a demo created %v", files)
	}
}

// Commands with --demo beside a running `serve --demo` use its database and key: the lines the
// demo prints work, a key made with apikey create --demo is accepted by the demo at once, and
// keys status sees the demo's SSN under the demo's key.
func TestDemoFlagBesideRunningDemo(t *testing.T) {
	t.Chdir(t.TempDir())
	addr := freeAddr(t)
	out, _, stop := background(noEnv, "serve", "--demo", "--addr", addr)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("serve --demo: %v", err)
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "keys status --demo") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	var printed int
	for _, line := range strings.Split(out.String(), "\n") {
		args, ok := strings.CutPrefix(line, "./backoffice ")
		if !ok {
			continue
		}
		printed++
		if _, errOut, code := runMain(noEnv, strings.Fields(args)...); code != 0 {
			t.Errorf("the demo's line %q: exit %d: %s", line, code, errOut)
		}
	}
	if printed < 2 {
		t.Fatalf("the demo printed %d command lines:\n%s", printed, out.String())
	}

	list, _, code := runMain(noEnv, "apikey", "list", "--demo")
	if code != 0 || !strings.Contains(list, string(demoID(111))) {
		t.Errorf("apikey list --demo: exit %d, no demo key listed:\n%s", code, list)
	}
	key, errOut, code := runMain(noEnv, "apikey", "create", "--demo", "--user", string(demoID(101)), "--name", "test")
	if code != 0 {
		t.Fatalf("apikey create --demo: exit %d: %s", code, errOut)
	}
	req := "http://" + addr + "/v1/crm/leads/" + string(demoLead) + "/service-acceptance"
	if status := runCurlLine(t, "curl -H 'Authorization: Api-Key "+strings.TrimSpace(key)+"' '"+req+"'"); status != 200 {
		t.Errorf("the demo answered %d to a key made with apikey create --demo", status)
	}
	status, errOut, code := runMain(noEnv, "keys", "status", "--demo")
	if code != 0 || !strings.Contains(squash(status), "active 1") {
		t.Errorf("keys status --demo: exit %d: %s%s", code, status, errOut)
	}
	// A key configured explicitly wins, as it does for serve --demo: here it is not the demo's.
	other := envOfMap(map[string]string{"BACKOFFICE_MASTER_KEY": secrets.NewKey()})
	if status, _, code := runMain(other, "keys", "status", "--demo"); code != 1 || !strings.Contains(status, "MISSING") {
		t.Errorf("keys status --demo under another key: exit %d:\n%s", code, status)
	}
	if _, err := os.Stat("backoffice.db"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a command with --demo touched ./backoffice.db: %v", err)
	}
}
