// Command durable is the limit of decrypt for bench/load.sh: the fastest a server can answer when
// each answer may leave only after a row recording it is durably committed. It is a plain net/http
// server whose every request hands a row to one writer goroutine; the writer takes the rows that
// are waiting, inserts them in one transaction and commits, and each request writes its answer
// (the bytes of -body, read once) after the commit returned. The row has seven columns and two
// secondary indexes, an audit event's by actor and by target, and holds what the service's event
// of a decrypt holds: a time-ordered uuid for its id, the user's and the principal's uuids
// (-actor; -target, or the UUID of a path /NAME/UUID, as load.sh's decrypt_many sends to spread
// the rows over many principals), the same action, outcome and detail. Index entries of the same
// size fill and split the index pages as often as the service's do, so each commit writes as
// many of them. What an audit event has beyond it (its id's unique index, its link and key id,
// its rows of the audit tree) is the service's own cost, measured against this limit. The
// database is the service's engine with the service's settings (SQLite: WAL, synchronous=FULL,
// immediate transactions; PostgreSQL: a committed transaction, in schema bench_durable of the
// same database).
//
//	durable -addr 127.0.0.1:9091 -db sqlite:/tmp/limit.db -body decrypt.json -actor UUID -target UUID
//	durable -addr 127.0.0.1:9091 -db postgres://… -body decrypt.json -actor UUID -target UUID
//
// With -sync N it measures the disk instead: N appends of 20 KiB to a file in -dir, each followed
// by fdatasync (fsync where the system has none), and prints the median and the 99th percentile
// of one append and its sync in ms.
package main

import (
	"database/sql"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"backoffice/internal/domain"
	pgstore "backoffice/internal/store/postgres"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)

// maxGroup bounds the rows of one transaction, as the service's writer bounds its groups.
const maxGroup = 128

func main() {
	addr := flag.String("addr", "127.0.0.1:9091", "listen address (loopback)")
	dbURL := flag.String("db", "", "sqlite:PATH or postgres://… (the same server as the service's)")
	bodyFile := flag.String("body", "", "file holding the answer's bytes")
	syncs := flag.Int("sync", 0, "measure N appends with fdatasync (fsync where there is none) in -dir instead of serving")
	dir := flag.String("dir", ".", "folder for -sync's file")
	actor := flag.String("actor", "00000002-0000-4000-8000-000000000001", "the user's id written in each row")
	target := flag.String("target", "00000006-0000-4000-8000-000000000001", "the principal's id written in each row")
	flag.Parse()
	if *syncs > 0 {
		if err := measureSync(*dir, *syncs); err != nil {
			fail(err)
		}
		return
	}
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		fail(err)
	}
	db, postgres, err := open(*dbURL)
	if err != nil {
		fail(err)
	}
	w := &writer{db: db, postgres: postgres, actor: *actor, reqs: make(chan request)}
	go w.run()
	h := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if err := w.record(targetOf(r.URL.Path, *target)); err != nil {
			http.Error(rw, err.Error(), http.StatusServiceUnavailable)
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
		rw.Write(body)
	})
	if err := http.ListenAndServe(*addr, h); err != nil {
		fail(err)
	}
}

// targetOf is the principal named by the row of a request for path: the UUID of a path
// /NAME/UUID (as a decrypt's event names the principal of its request), else fallback (-target).
func targetOf(path, fallback string) string {
	_, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if id, err := domain.ParseID(rest); err == nil {
		return id.String()
	}
	return fallback
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "durable:", err)
	os.Exit(1)
}

// open connects with the service's settings and creates the table.
func open(dbURL string) (*sql.DB, bool, error) {
	var db *sql.DB
	var err error
	postgres := strings.HasPrefix(dbURL, "postgres://") || strings.HasPrefix(dbURL, "postgresql://")
	switch {
	case postgres:
		// Connected as the service connects (the store's postgres.Config): statements sent as
		// the service sends its own, as text unless the URL chooses its own mode.
		var cfg *pgx.ConnConfig
		if cfg, _, err = pgstore.Config(dbURL); err != nil {
			return nil, false, err
		}
		db = stdlib.OpenDB(*cfg)
	case strings.HasPrefix(dbURL, "sqlite:"):
		q := url.Values{}
		for _, p := range []string{"foreign_keys(1)", "journal_mode(WAL)", "busy_timeout(10000)", "secure_delete(1)", "synchronous(FULL)"} {
			q.Add("_pragma", p)
		}
		q.Set("_txlock", "immediate")
		db, err = sql.Open("sqlite", "file:"+strings.TrimPrefix(dbURL, "sqlite:")+"?"+q.Encode())
	default:
		return nil, false, fmt.Errorf("-db %q: want sqlite:PATH or postgres://…", dbURL)
	}
	if err != nil {
		return nil, false, err
	}
	schema := []string{
		`CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, at INTEGER NOT NULL,
			actor TEXT NOT NULL, action TEXT NOT NULL, target TEXT NOT NULL, outcome TEXT NOT NULL, detail TEXT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS events_actor ON events (actor, seq)`,
		`CREATE INDEX IF NOT EXISTS events_target ON events (target, seq)`,
	}
	if postgres {
		schema = []string{
			`CREATE SCHEMA IF NOT EXISTS bench_durable`,
			`CREATE TABLE IF NOT EXISTS bench_durable.events (seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id TEXT NOT NULL,
				at BIGINT NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL, target TEXT NOT NULL, outcome TEXT NOT NULL, detail TEXT NOT NULL)`,
			`CREATE INDEX IF NOT EXISTS events_actor ON bench_durable.events (actor, seq)`,
			`CREATE INDEX IF NOT EXISTS events_target ON bench_durable.events (target, seq)`,
		}
	}
	for _, s := range schema {
		if _, err := db.Exec(s); err != nil {
			db.Close()
			return nil, false, err
		}
	}
	return db, postgres, nil
}

type request struct {
	target string
	done   chan error
}

// writer commits the rows of the requests waiting, one transaction at a time.
type writer struct {
	db       *sql.DB
	postgres bool
	actor    string
	reqs     chan request
}

func (w *writer) record(target string) error {
	r := request{target: target, done: make(chan error, 1)}
	w.reqs <- r
	return <-r.done
}

// run takes one request, then every request already waiting (up to maxGroup), and commits their
// rows together.
func (w *writer) run() {
	group := make([]request, 0, maxGroup)
	for {
		group = append(group[:0], <-w.reqs)
	gather:
		for len(group) < maxGroup {
			select {
			case r := <-w.reqs:
				group = append(group, r)
			default:
				break gather
			}
		}
		err := w.commit(group)
		for _, r := range group {
			r.done <- err
		}
	}
}

func (w *writer) commit(group []request) error {
	tx, err := w.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	args := make([]any, 0, 7*len(group))
	now := time.Now()
	for _, r := range group {
		args = append(args, domain.NewTimeOrderedID(now).String(), now.UnixMicro(), w.actor, "principal.decrypt", r.target, "granted", "field ssn")
	}
	if _, err := tx.Exec(w.insert(len(group)), args...); err != nil {
		return err
	}
	return tx.Commit()
}

// insert is one INSERT of n rows.
func (w *writer) insert(n int) string {
	var b strings.Builder
	table := "events"
	if w.postgres {
		table = "bench_durable.events"
	}
	b.WriteString("INSERT INTO " + table + " (id, at, actor, action, target, outcome, detail) VALUES ")
	p := 0
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for c := range 7 {
			if c > 0 {
				b.WriteString(", ")
			}
			p++
			if w.postgres {
				b.WriteString("$" + strconv.Itoa(p))
			} else {
				b.WriteByte('?')
			}
		}
		b.WriteByte(')')
	}
	return b.String()
}

// measureSync appends 20 KiB to a new file in dir n times, each followed by syncData, and prints
// "p50_ms p99_ms" of one append and its sync.
func measureSync(dir string, n int) error {
	f, err := os.CreateTemp(dir, "sync-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	block := make([]byte, 20<<10)
	took := make([]float64, n)
	for i := range n {
		t0 := time.Now()
		if _, err := f.Write(block); err != nil {
			return err
		}
		if err := syncData(f); err != nil {
			return err
		}
		took[i] = float64(time.Since(t0).Microseconds()) / 1000
	}
	slices.Sort(took)
	fmt.Printf("%.3f %.3f\n", took[n/2], took[min(n-1, n*99/100)])
	return nil
}
