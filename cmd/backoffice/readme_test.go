package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeBuildLine is the README's build step. The test runs it from the repository's root as
// written, except that the binary goes to the test's folder instead of the working tree.
const readmeBuildLine = "go build -o backoffice ./cmd/backoffice"

// TestReadmeCommandLines runs the README's shell blocks marked <!-- readme-test: demo --> and
// <!-- readme-test: cli --> the way a user pastes them: the build, then `serve --demo` in a fresh
// directory, then each line of the CLI block with sh -c in that directory, each of which must
// exit 0. The demo listens on a free port given in BACKOFFICE_ADDR (the one variable set; every
// other BACKOFFICE_* variable is removed), so the README may keep the default address.
func TestReadmeCommandLines(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the demo")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	demo, cli := readmeBlock(t, readme, "demo"), readmeBlock(t, readme, "cli")
	dir := t.TempDir()
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
	var logs bytes.Buffer
	srv := exec.Command("sh", "-c", "exec "+serveLine)
	srv.Dir, srv.Env, srv.Stderr = dir, env, &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	waitUp(t, "http://"+addr)

	for _, line := range cli {
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", line, err, out)
		}
	}

	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s exited with %v\n%s", serveLine, err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Error("the demo did not stop on SIGTERM")
	}
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
