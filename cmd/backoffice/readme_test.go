package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// readmeBuildLine is the README's build step. The test runs it from the repository's root as
// written, except that the binary goes to the test's folder instead of the working tree.
const readmeBuildLine = "go build -o backoffice ./cmd/backoffice"

// TestReadmeCommandLines runs the README's shell blocks marked <!-- readme-test: … --> the way a
// user pastes them: the build, then `serve --demo`, then each line of the CLI block with sh -c,
// each of which must exit 0; then the curl lines the demo printed, in order; then the blocks a
// user pastes whole into one shell, each as one script: the section from the demo to one's own
// data (its own serve in the background, beside the demo) and the walk-through, each answer
// checked; then, the demo stopped as the README says, the simulator block (a gateway simulator
// in the background, the demo again pointed at it) and the calls that push through it. The demo
// listens on a free port given in BACKOFFICE_ADDR (the one variable set; every other
// BACKOFFICE_* variable is removed), and every other address is a free one in place of the
// README's, so the README may keep the default addresses.
//
// The blocks run in a scratch git repository holding the checkout's .gitignore, standing for
// the checkout a user runs them in: afterwards it must hold no file git would report, or every
// later build of the checkout would be marked modified. (Without git, or outside a git checkout,
// that check is skipped.) The real checkout must be as it was, too.
func TestReadmeCommandLines(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the demo")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	demo, cli := readmeBlock(t, readme, "demo"), readmeBlock(t, readme, "cli")
	ownData, walkthrough := readmeBlock(t, readme, "own-data"), readmeBlock(t, readme, "walkthrough")
	sim, simCalls := readmeBlock(t, readme, "simulator"), readmeBlock(t, readme, "simulator-calls")
	checkoutBefore, inGit := gitStatus(t, "../..")
	dir := t.TempDir()
	if inGit {
		scratchCheckout(t, dir)
	}
	addr := freeAddr(t)
	env := append(userEnviron(), "BACKOFFICE_ADDR="+addr, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))

	var serveLine string
	for _, line := range demo {
		switch {
		case line == readmeBuildLine:
			build := exec.Command("sh", "-c", strings.Replace(line, "-o backoffice", "-o "+filepath.Join(dir, "backoffice"), 1))
			build.Dir = "../.."
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", line, err, out)
			}
		case strings.HasPrefix(line, "./backoffice serve "):
			serveLine = line
		default:
			t.Fatalf("the demo block has a line this test does not know how to run: %q", line)
		}
	}
	if serveLine == "" {
		t.Fatal("the demo block does not start the demo")
	}
	stopDemo, demoOutput := startLogged(t, dir, env, serveLine)
	waitUp(t, "http://"+addr)
	for _, line := range cli {
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", line, err, out)
		}
	}
	_, haveCurl := exec.LookPath("curl")
	if haveCurl != nil {
		t.Log("curl is not installed: the demo's printed lines, the walk-through and the calls of the section on one's own data are not run")
	} else {
		runDemoLines(t, dir, env, demoOutput)
		runOwnData(t, dir, env, ownData)
		runWalkthrough(t, dir, env, walkthrough, addr)
	}
	stopDemo()

	// The README has the demo stopped first: the simulator's serve takes the same address.
	simAddr := freeAddr(t)
	var stops []func()
	for _, line := range sim {
		line = strings.ReplaceAll(line, "127.0.0.1:8090", simAddr)
		switch {
		case strings.HasSuffix(line, "&") && strings.HasPrefix(line, "./backoffice gateway-sim "):
			stops = append(stops, start(t, dir, env, strings.TrimSuffix(line, "&")))
			waitUp(t, "http://"+simAddr)
		case strings.Contains(line, "./backoffice serve --demo"):
			stops = append(stops, start(t, dir, env, line))
			waitUp(t, "http://"+addr)
		default:
			t.Fatalf("the simulator block has a line this test does not know how to run: %q", line)
		}
	}
	if haveCurl != nil {
		t.Log("curl is not installed: the simulator's calls are not run")
	} else {
		for i, line := range simCalls {
			line = strings.ReplaceAll(strings.ReplaceAll(line, "127.0.0.1:8090", simAddr), "127.0.0.1:8080", addr)
			cmd := exec.Command("sh", "-c", line)
			cmd.Dir, cmd.Env = dir, env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s: %v\n%s", line, err, out)
			}
			// The push went through the flaky simulator: the line item, or a documented 502.
			if i == 0 && !strings.Contains(string(out), `"id":"00000000-0000-4000-8000-000000001101"`) && !strings.Contains(string(out), `"gateway_unavailable"`) {
				t.Errorf("%s: %s", line, out)
			}
			// The push's note, read from the export, says after how many attempts it ended.
			if strings.Contains(line, "export") && !regexp.MustCompile(`(succeeded|failed: .*) after [0-9]+ attempt\(s\)`).Match(out) {
				t.Errorf("%s: %s; want the push's note with its attempts", line, out)
			}
		}
	}
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}

	if inGit {
		if files := untracked(t, dir); len(files) > 0 {
			t.Errorf("the README's blocks leave files .gitignore does not cover, which mark a checkout modified: %v", files)
		}
		if after, _ := gitStatus(t, "../.."); after != checkoutBefore {
			t.Errorf("the checkout changed while the README's blocks ran:\nbefore:\n%s\nafter:\n%s", checkoutBefore, after)
		}
	} else {
		t.Log("not in a git checkout: the check for files left behind is skipped")
	}
}

// runDemoLines runs the curl lines the demo printed, in order, as a user pastes them first: each
// must exit 0, and the document deletion answer 204 (the demo's database is new).
func runDemoLines(t *testing.T, dir string, env []string, output func() string) {
	t.Helper()
	var printed string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if printed = output(); strings.Contains(printed, "# Commands beside this demo") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo did not print its lines:\n%s", printed)
		}
	}
	n := 0
	for _, line := range strings.Split(printed, "\n") {
		if !strings.HasPrefix(line, "curl ") {
			continue
		}
		n++
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("the demo's line %s: %v\n%s", line, err, out)
		}
		if strings.Contains(line, "-X DELETE") && !strings.HasPrefix(string(out), "HTTP/1.1 204") {
			t.Errorf("the demo's line %s answered:\n%s\nwant 204", line, out)
		}
	}
	if n < 9 {
		t.Errorf("the demo printed %d curl lines; want one per operation and more:\n%s", n, printed)
	}
}

// runOwnData runs the section from the demo to one's own data as one script, the way a user
// pastes it into one shell, beside the running demo: its serve takes a free address in place of
// the README's (the block waits for it to answer itself). The answers must be what the section
// says.
func runOwnData(t *testing.T, dir string, env []string, block []string) {
	t.Helper()
	addr := freeAddr(t)
	var script []string
	served := false
	for _, line := range block {
		line = strings.ReplaceAll(line, "127.0.0.1:8081", addr)
		script = append(script, line)
		if strings.HasPrefix(line, "./backoffice serve ") && strings.HasSuffix(line, "&") {
			served = true
		}
	}
	if !served {
		t.Fatal("the section on one's own data starts no serve in the background")
	}
	stdout := runScript(t, dir, env, "own-data", script)
	for _, want := range []string{
		`"totalCount":1`, // the staff user's SAM action logs…
		`"action":"api_key.create"`,
		`"code":"forbidden"`,
		"permissions [audit_events.read sam_action_logs.read]",
		"auditor@example.com",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the section on one's own data printed no %s:\n%s", want, stdout)
		}
	}
	if n := strings.Count(stdout, `"totalCount":1`); n != 2 {
		t.Errorf("the section on one's own data read the lead's logs %d times; want 2 (staff and the partner's user):\n%s", n, stdout)
	}
}

// runWalkthrough runs the walk-through with curl as one script, after the demo's own lines, and
// checks that each call found what it asked for: the deletion answers 204, nothing 404.
func runWalkthrough(t *testing.T, dir string, env []string, block []string, addr string) {
	t.Helper()
	var script []string
	for _, line := range block {
		script = append(script, strings.ReplaceAll(line, "127.0.0.1:8080", addr))
	}
	stdout := runScript(t, dir, env, "walkthrough", script)
	for _, want := range []string{"HTTP/1.1 204", `{"ssn":"123-45-6789"}`, `"action":"merchant_document.delete"`, `"parameter":"size"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the walk-through printed no %s:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, `"not_found"`) || strings.Contains(stdout, "HTTP/1.1 404") {
		t.Errorf("a call of the walk-through found nothing:\n%s", stdout)
	}
}

// runScript runs lines as one sh script that stops at the first failing command (sh -e), and
// returns its standard output; a background job it leaves is killed as the script exits.
func runScript(t *testing.T, dir string, env []string, name string, lines []string) string {
	t.Helper()
	script := "trap 'kill $! 2>/dev/null || :' EXIT\n" + strings.Join(lines, "\n") + "\n"
	cmd := exec.Command("sh", "-ec", script)
	var stdout, stderr bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, &stdout, &stderr
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Run(); err != nil {
		t.Errorf("the README's %s block: %v\nstdout:\n%s\nstderr:\n%s", name, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// start runs a command line in the background and returns what stops it (SIGTERM, then a wait
// for it to exit 0).
func start(t *testing.T, dir string, env []string, line string) (stop func()) {
	t.Helper()
	stop, _ = startLogged(t, dir, env, line)
	return stop
}

// startLogged is start, which also returns what the command has printed so far.
func startLogged(t *testing.T, dir string, env []string, line string) (stop func(), output func() string) {
	t.Helper()
	logs := &syncBuffer{}
	// exec, so that the signal reaches the command itself; variables set on the line go before it.
	words := strings.Fields(line)
	i := 0
	for i < len(words) && strings.Contains(words[i], "=") && !strings.HasPrefix(words[i], "-") {
		i++
	}
	cmdLine := strings.Join(append(append(words[:i:i], "exec"), words[i:]...), " ")
	cmd := exec.Command("sh", "-c", cmdLine)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := false
	stop = func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("%s: %v", line, err)
			return
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s exited with %v\n%s", line, err, logs.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("%s did not stop on SIGTERM", line)
		}
	}

	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s:\n%s", line, logs.String())
		}
	})
	return stop, logs.String
}

// syncBuffer is a bytes.Buffer a command writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// gitStatus is `git status --porcelain` of the checkout at dir, and whether dir is in one.
func gitStatus(t *testing.T, dir string) (string, bool) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		return "", false
	}
	if err := exec.Command("git", "-C", dir, "rev-parse", "--is-inside-work-tree").Run(); err != nil {
		return "", false
	}
	out, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=all").Output()
	if err != nil {
		t.Fatalf("git status: %v", err)
	}
	return string(out), true
}

// scratchCheckout makes dir a git repository with the checkout's .gitignore.
func scratchCheckout(t *testing.T, dir string) {
	t.Helper()
	ignore, err := os.ReadFile("../../.gitignore")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), ignore, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
}

// untracked lists the files of dir's repository that git would report: neither tracked nor
// ignored (its .gitignore aside).
func untracked(t *testing.T, dir string) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "ls-files", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []string
	for _, f := range strings.Fields(string(out)) {
		if f != ".gitignore" {
			files = append(files, f)
		}
	}
	return files
}

// readmeBlock returns the command lines of the fenced block that follows the README's
// <!-- readme-test: name --> marker: comments and blank lines dropped, continued lines joined.
func readmeBlock(t *testing.T, readme []byte, name string) []string {
	t.Helper()
	marker := "<!-- readme-test: " + name + " -->"
	_, after, ok := bytes.Cut(readme, []byte(marker))
	if !ok {
		t.Fatalf("README.md has no %s", marker)
	}
	sc := bufio.NewScanner(bytes.NewReader(after))
	var lines []string
	var pending string
	inBlock := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !inBlock && strings.HasPrefix(line, "```"):
			inBlock = true
		case !inBlock && strings.TrimSpace(line) != "":
			t.Fatalf("%s is not followed by a fenced block", marker)
		case inBlock && strings.HasPrefix(line, "```"):
			if len(lines) == 0 {
				t.Fatalf("the block after %s is empty", marker)
			}
			return lines
		case inBlock:
			if cont, ok := strings.CutSuffix(line, `\`); ok {
				pending += cont
				continue
			}
			line = strings.TrimSpace(pending + line)
			pending = ""
			if line != "" && !strings.HasPrefix(line, "#") {
				lines = append(lines, line)
			}
		}
	}
	t.Fatalf("the block after %s is not closed", marker)
	return nil
}

// userEnviron is this process's environment without BACKOFFICE_* variables: a user who follows
// the README has configured nothing.
func userEnviron() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BACKOFFICE_") {
			env = append(env, kv)
		}
	}
	return env
}
