package app

import (
	"context"
	"net"
	"strings"
	"testing"
)

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// background runs a long-lived command (serve, gateway-sim) until stop is called; stop returns
// the command's error.
func background(getenv func(string) string, args ...string) (stdout, stderr *lockedBuffer, stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr = &lockedBuffer{}, &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Env{Args: args, Getenv: getenv, Stdin: strings.NewReader(""), Stdout: stdout, Stderr: stderr})
	}()
	return stdout, stderr, func() error {
		cancel()
		return <-done
	}
}

func noEnv(string) string { return "" }
