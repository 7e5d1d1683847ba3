package app

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"backoffice/internal/api"
)

// What the real server answers to requests that no handler of ours would describe: "OPTIONS *"
// reaches the handler and gets the error body; a request that is not valid HTTP/1.1 gets net/http's
// own plain-text answers (400, 431, 505, 417): the one exception to the OpenAPI document that
// the README names.
func TestServerEdges(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := newServer(api.New(api.Deps{Logger: log}), log, minWriteTimeout)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	cases := []struct {
		name, request string
		status        int
		contentType   string
	}{
		{"OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusNotFound, "application/json"},
		{"malformed request line", "GET\r\nHost: x\r\n\r\n", http.StatusBadRequest, "text/plain; charset=utf-8"},
		{"no Host", "GET /healthz HTTP/1.1\r\n\r\n", http.StatusBadRequest, "text/plain; charset=utf-8"},
		{"HTTP version", "GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", http.StatusHTTPVersionNotSupported, "text/plain; charset=utf-8"},
		{"Expect", "GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: nothing\r\n\r\n", http.StatusExpectationFailed, ""},
		{"headers over 64 KiB", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Padding: " + strings.Repeat("p", 70<<10) + "\r\n\r\n",
			http.StatusRequestHeaderFieldsTooLarge, "text/plain; charset=utf-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, c.request); err != nil {
				t.Fatal(err)
			}
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != c.status || res.Header.Get("Content-Type") != c.contentType {
				t.Fatalf("%d %q, want %d %q: %s", res.StatusCode, res.Header.Get("Content-Type"), c.status, c.contentType, body)
			}
			if c.contentType == "application/json" && !strings.Contains(string(body), `"code":"not_found"`) {
				t.Fatalf("body %s", body)
			}
		})
	}
}
