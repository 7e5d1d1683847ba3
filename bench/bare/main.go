// Command bare is the machine's limit for bench/load.sh: a net/http server that answers every
// request for /NAME with the bytes of DIR/NAME.json, read once at start, as application/json.
// It does what the service does on the wire and nothing else: no routing beyond a map lookup,
// no authentication, no database, no logging.
//
//	bare -addr 127.0.0.1:9090 -dir bodies/
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9090", "listen address (loopback)")
	dir := flag.String("dir", ".", "folder of NAME.json bodies")
	flag.Parse()
	files, err := filepath.Glob(filepath.Join(*dir, "*.json"))
	if err != nil || len(files) == 0 {
		fmt.Fprintln(os.Stderr, "bare: no bodies in", *dir)
		os.Exit(1)
	}
	bodies := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bare:", err)
			os.Exit(1)
		}
		bodies["/"+strings.TrimSuffix(filepath.Base(f), ".json")] = b
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := bodies[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Write(b)
	})
	if err := http.ListenAndServe(*addr, h); err != nil {
		fmt.Fprintln(os.Stderr, "bare:", err)
		os.Exit(1)
	}
}
