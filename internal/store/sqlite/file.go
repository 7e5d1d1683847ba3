package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"backoffice/internal/pause"
)

// busyTimeout is how long a writer waits for another process's write lock (ms).
const busyTimeout = 10000

// createFile makes an empty database file readable by its owner only: it holds documents,
// names and credential hashes. SQLite gives its -wal and -shm files the mode of the database
// file, and takes an empty file for an empty database.
func createFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	return f.Close()
}

// dbFile is the database file a store opened. SQLite keeps writing through the descriptors it
// has even when the file is removed or replaced, and every such write would be lost: checking
// the path still names the same file before each write transaction turns that into an error.
type dbFile struct {
	path   string
	opened os.FileInfo
}

func statDBFile(path string) (*dbFile, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, missingFile(path, err)
	}
	return &dbFile{path: path, opened: fi}, nil
}

// missingFile names the path in the one line a command prints when its database does not exist.
func missingFile(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sqlite: database file %s does not exist (serve and import create it)", path)
	}
	return fmt.Errorf("sqlite: %s: %w", path, err)
}

var errFileReplaced = errors.New("the database file was removed or replaced since it was opened")

// check fails when the path no longer names the file that was opened.
func (f *dbFile) check() error {
	fi, err := os.Stat(f.path)
	if err != nil || !os.SameFile(fi, f.opened) {
		return fmt.Errorf("sqlite: %s: %w", f.path, errFileReplaced)
	}
	return nil
}

// walPurger checkpoints the WAL in the background until it is truncated, so that the copies of
// a deleted document's pages that the WAL still holds leave the disk. A checkpoint that
// truncates must wait for every reader to leave the WAL, and it holds the write lock while it
// waits: run on the request, a DELETE beside a long export would wait for the export, and every
// writer behind it. Here each attempt has no busy timeout, so it gives up at once when a reader or writer
// is in the way, and the next attempt comes after a growing pause. The pool is given with each
// kick, and only the purger's goroutine keeps it: the engine holds no way to the pool (a
// transaction's body may hold the engine, docs/architecture.md "Transactions").
type walPurger struct {
	start   sync.Once
	stopped sync.Once
	kicks   chan struct{}
	// ctx ends when the purger is stopped (cancel).
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu              sync.Mutex
	cond            *sync.Cond
	wanted, purged  uint64 // passes asked for, and the last one that completed
	first, maxDelay time.Duration
}

func newWALPurger() *walPurger {
	ctx, cancel := context.WithCancel(context.Background())
	p := &walPurger{kicks: make(chan struct{}, 1), ctx: ctx, cancel: cancel, done: make(chan struct{}),
		first: 10 * time.Millisecond, maxDelay: time.Second}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// kick asks for a truncating checkpoint of db and returns at once.
func (p *walPurger) kick(db *sql.DB) uint64 {
	if p == nil {
		return 0
	}
	p.start.Do(func() { go p.run(db) })
	p.mu.Lock()
	p.wanted++
	n := p.wanted
	p.mu.Unlock()
	select {
	case p.kicks <- struct{}{}:
	default: // a pass is already due; it will cover this request too
	}
	return n
}

// wait blocks until the pass asked for as n has completed (tests).
func (p *walPurger) wait(n uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.purged < n {
		p.cond.Wait()
	}
}

// run makes the passes kicked, and one last attempt, when stopped, if a pass was still due: the
// next start-up checkpoints anyway.
func (p *walPurger) run(db *sql.DB) {
	defer close(p.done)
	defer p.lastAttempt(db)
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.kicks:
		}
		p.mu.Lock()
		target := p.wanted
		p.mu.Unlock()
		if !p.untilTruncated(db) {
			return
		}
		p.mu.Lock()
		p.purged = target
		p.cond.Broadcast()
		p.mu.Unlock()
	}
}

// lastAttempt tries once more if a pass is still due.
func (p *walPurger) lastAttempt(db *sql.DB) {
	p.mu.Lock()
	due := p.purged < p.wanted
	p.mu.Unlock()
	if due {
		truncateWAL(db)
	}
}

// untilTruncated tries until a checkpoint truncates the WAL; false when stopped first.
func (p *walPurger) untilTruncated(db *sql.DB) bool {
	delay := p.first
	for !truncateWAL(db) {
		if pause.For(p.ctx, delay) != nil {
			return false
		}
		delay = min(2*delay, p.maxDelay)
	}
	return true
}

// truncateWAL runs one truncating checkpoint of db that waits for nothing.
func truncateWAL(db *sql.DB) bool {
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return false
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		return false
	}
	defer conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", busyTimeout))
	var busy, frames, done int
	err = conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &frames, &done)
	return err == nil && busy == 0
}

// stop ends the purger, once its last attempt is made (run).
func (p *walPurger) stop() {
	if p == nil {
		return
	}
	p.stopped.Do(func() {
		p.start.Do(func() { close(p.done) }) // never started
		p.cancel()
		<-p.done
	})
}
