package app

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"backoffice/internal/testdb"
)

const childExportVar = "BACKOFFICE_TEST_CHILD_EXPORT"

func TestExportChildProcess(t *testing.T) {
	if os.Getenv(childExportVar) == "" {
		t.Skip("run by TestExportKilledLeavesNothing")
	}
	env := Env{Args: []string{"export", "--include-secrets", os.Getenv(childExportVar)}, Getenv: os.Getenv, Stdin: strings.NewReader(""), Stdout: os.Stdout, Stderr: os.Stderr}
	os.Exit(Report(os.Stderr, Run(context.Background(), env)))
}

// An export with plaintext SSNs killed outright (kill -9) while it writes leaves nothing on disk:
// its file has no name until it is whole. The child is killed once it holds a file open in the
// output's folder (/proc/PID/fd), so while it writes.
func TestExportKilledLeavesNothing(t *testing.T) {
	url := testdb.URL(t, "sqlite")
	st := testdb.OpenAsIs(t, url)
	importDataset(t, st, testDataset(20000), testdb.Ring(t, "k1"))
	st.Close()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestExportChildProcess$")
	cmd.Env = append(os.Environ(), childExportVar+"="+filepath.Join(dir, "out.json"), "BACKOFFICE_DATABASE_URL="+url,
		"BACKOFFICE_MASTER_KEYS="+ringSpec("k1"), "BACKOFFICE_MASTER_KEY=", "BACKOFFICE_MASTER_KEYS_FILE=", "BACKOFFICE_MASTER_KEY_FILE=")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	writing := false
	for deadline := time.Now().Add(30 * time.Second); !writing && time.Now().Before(deadline); {
		writing = holdsFileIn(cmd.Process.Pid, dir)
		if !writing {
			time.Sleep(time.Millisecond)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if !writing {
		t.Fatal("the export was never seen writing in its folder: it ended first, or never began")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("the killed export left %s in its folder", e.Name())
	}
}

// holdsFileIn: process pid has a file open in dir (named or not: an unnamed one reads
// "dir/#N (deleted)").
func holdsFileIn(pid int, dir string) bool {
	fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		return false
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir+"/") {
			return true
		}
	}
	return false
}
