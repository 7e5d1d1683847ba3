package testdb

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// PgBouncer is a pooler of the test's own, in transaction mode in front of the PostgreSQL server
// of BACKOFFICE_TEST_POSTGRES_URL, started by .ci/pgbouncer: a test that restarts it disturbs no
// other test.
type PgBouncer struct {
	t    testing.TB
	port string
	dir  string // the running instance's directory (its pid file)
}

// StartPgBouncer starts a PgBouncer for the test, stopped when it ends, and returns dbURL (a URL
// of the test's server) rewritten to reach its database through it. It skips the test where the
// pooler tests are not wanted (BACKOFFICE_TEST_PGBOUNCER_URL unset) or pgbouncer is missing.
func StartPgBouncer(t testing.TB, dbURL string) (string, *PgBouncer) {
	t.Helper()
	if os.Getenv(PgBouncerURLVar) == "" {
		t.Skipf("PgBouncer tests skipped: set %s to run them", PgBouncerURLVar)
	}
	if _, err := exec.LookPath("pgbouncer"); err != nil {
		t.Skip("PgBouncer tests skipped: pgbouncer is not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	p := &PgBouncer{t: t, port: port}
	p.dir = p.start()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = net.JoinHostPort("127.0.0.1", port)
	return u.String(), p
}

// Restart replaces the pooler as an operator restarting it without refusing connections does: a
// new instance on the same port first (the socket is shared), then the old one stopped at once
// (SIGTERM), which closes every client connection and server connection it had.
func (p *PgBouncer) Restart() {
	p.t.Helper()
	old := p.dir
	p.dir = p.start()
	p.stop(old)
}

// start runs .ci/pgbouncer in a new directory and returns the directory.
func (p *PgBouncer) start() string {
	p.t.Helper()
	dir, err := os.MkdirTemp("", "backoffice-pgbouncer")
	if err != nil {
		p.t.Fatal(err)
	}
	// Stopped before its directory goes: the pid file is how it is found.
	p.t.Cleanup(func() {
		p.stop(dir)
		os.RemoveAll(dir)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot(), ".ci", "pgbouncer"), dir, p.port, serverPort(p.t))
	cmd.Env = append(os.Environ(), "POOL_SIZE=4")
	if out, err := cmd.CombinedOutput(); err != nil {
		p.t.Fatalf("start pgbouncer: %v\n%s", err, out)
	}
	return dir
}

// stop ends the instance of dir at once (it closes its sockets as it exits), and removes its pid
// file so that it is signalled once.
func (p *PgBouncer) stop(dir string) {
	file := filepath.Join(dir, "pgbouncer.pid")
	b, err := os.ReadFile(file)
	if err != nil {
		return // stopped already
	}
	os.Remove(file)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		p.t.Errorf("pgbouncer pid file: %v", err)
		return
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		return // gone already
	}
	defer proc.Release()
	// Where SIGTERM cannot be sent (Windows), the process is killed outright.
	if err := proc.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		if err := proc.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			p.t.Errorf("stop pgbouncer (pid %d): %v", pid, err)
		}
	}
}

// serverPort is the port of the server of BACKOFFICE_TEST_POSTGRES_URL.
func serverPort(t testing.TB) string {
	u, err := url.Parse(postgresBase(t))
	if err != nil || u.Port() == "" {
		return "5432"
	}
	return u.Port()
}

// repoRoot is the repository's directory, two above this file's.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// TerminateBackends ends every server process connected to the database of dbURL (a URL of the
// test's server or of a pooler in front of it) but the caller's, as an operator's
// pg_terminate_backend or a failover does, and returns how many it ended.
func TerminateBackends(t testing.TB, dbURL string) int {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	// OFFSET 0 keeps the subquery whole, so that only the database's own processes are ended
	// (the planner may otherwise test the termination before the name).
	err = adminDB(t, postgresBase(t)).QueryRowContext(context.Background(),
		`SELECT count(*) FROM (SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() OFFSET 0) a
		WHERE pg_terminate_backend(a.pid)`,
		strings.TrimPrefix(u.Path, "/")).Scan(&n)
	if err != nil {
		t.Fatalf("terminate backends: %v", err)
	}
	return n
}
