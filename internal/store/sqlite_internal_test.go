package store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// A SQLite database locked past the busy timeout by another process reads as unavailable (503),
// not as our own fault (500).
func TestSQLiteBusyIsUnavailable(t *testing.T) {
	ctx := context.Background()
	a, url := openSQLite(t)
	defer holdWriteLock(t, url)()
	a.db.SetMaxOpenConns(1) // one connection, so the pragma below applies to the insert's
	if _, err := a.db.ExecContext(ctx, "PRAGMA busy_timeout = 1"); err != nil {
		t.Fatal(err)
	}
	_, err := a.pool.Exec(ctx, `INSERT INTO partners (id, name) VALUES (?, ?)`, "00000000-0000-4000-8000-000000000001", "p")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("insert into a locked database: %v, want ErrUnavailable", err)
	}
	if n := a.db.Stats().MaxIdleClosed; n != 0 {
		t.Errorf("%d idle connections closed after a busy error; a SQLite connection outlives it", n)
	}
}

// A transaction is rolled back when its function fails or panics: nothing of it stays.
func TestTxRollsBackOnErrorAndPanic(t *testing.T) {
	ctx := context.Background()
	s, _ := openSQLite(t)
	insert := func(q *sqltx.Tx) error {
		_, err := q.Exec(ctx, `INSERT INTO partners (id, name) VALUES (?, ?)`, "00000000-0000-4000-8000-000000000001", "p")
		return err
	}
	failed := errors.New("fails after the insert")
	if err := s.pool.Tx(ctx, func(q *sqltx.Tx) error { _ = insert(q); return failed }); !errors.Is(err, failed) {
		t.Fatalf("tx error %v", err)
	}
	func() {
		defer func() { _ = recover() }()
		_ = s.pool.Tx(ctx, func(q *sqltx.Tx) error { _ = insert(q); panic("boom") })
	}()
	if empty, err := s.IsEmpty(ctx); err != nil || !empty {
		t.Fatalf("after a failed and a panicking transaction: empty=%v, %v", empty, err)
	}
}

// While another process holds the write lock (an import, say), the audit writer waits for it
// like any writer; the read cache's checks and the cached reads go on being answered meanwhile:
// they never pass through the audit writer. The group is written once the lock is free.
func TestChecksGoOnWhileTheAuditWriterWaitsForTheLock(t *testing.T) {
	ctx := context.Background()
	a, url := openSQLite(t)
	release := holdWriteLock(t, url)
	recorded := make(chan error, 1)
	go func() {
		recorded <- a.RecordAudit(ctx, domain.AuditEvent{At: time.Now(), ActorUserID: "u", Action: "principal.decrypt", TargetID: "p", Outcome: domain.OutcomeGranted})
	}()
	time.Sleep(100 * time.Millisecond) // the group meets the lock
	// Bounded only so that a regression fails instead of hanging: the lock is held 10 s.
	vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for range 3 {
		if _, err := a.cache.changes.Version(vctx); err != nil {
			t.Fatalf("the cache generation could not be read while an audit group waited for the lock: %v", err)
		}
		if _, err := a.Credential(vctx, domain.CredentialAPIKey, []byte("no such key")); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("a cached read while an audit group waited for the lock: %v", err)
		}
	}
	select {
	case err := <-recorded:
		t.Fatalf("the audit event was answered (%v) while another process held the write lock", err)
	default:
	}
	release()
	if err := <-recorded; err != nil {
		t.Fatalf("the audit event was not written once the lock was free: %v", err)
	}
	var n int
	if err := a.db.QueryRowContext(ctx, "SELECT count(*) FROM audit_events").Scan(&n); err != nil || n != 1 {
		t.Errorf("%d audit events (%v), want 1", n, err)
	}
}

// blockingSigner links like testSigner, but holds the audit writer inside its transaction (the
// links are made there, after the chain's head is read) until release is closed.
type blockingSigner struct {
	testSigner
	inside  chan struct{}
	release chan struct{}
}

func (b blockingSigner) ChainMAC(keyID string, message []byte) ([]byte, error) {
	select {
	case b.inside <- struct{}{}:
	default:
	}
	<-b.release
	return b.testSigner.ChainMAC(keyID, message)
}

// A check of the read cache and a cached read complete while the audit writer is stopped in the
// middle of its commit, holding this process's writers' lock and SQLite's write lock: no read or
// check waits for it.
func TestChecksNeverWaitForTheAuditWriter(t *testing.T) {
	ctx := context.Background()
	a, _ := openSQLite(t)
	sig := blockingSigner{inside: make(chan struct{}, 1), release: make(chan struct{})}
	a.SetChainSigner(sig)
	recorded := make(chan error, 1)
	go func() {
		recorded <- a.RecordAudit(ctx, domain.AuditEvent{At: time.Now(), ActorUserID: "u", Action: "principal.decrypt", TargetID: "p", Outcome: domain.OutcomeGranted})
	}()
	<-sig.inside
	vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := a.cache.changes.Version(vctx); err != nil {
		t.Errorf("a check while the audit writer was mid-commit: %v", err)
	}
	if _, err := a.PrincipalSSN(vctx, domain.Scope{}, "lead", "principal"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("a cached read while the audit writer was mid-commit: %v", err)
	}
	close(sig.release)
	if err := <-recorded; err != nil {
		t.Fatalf("the audit event: %v", err)
	}
}

// holdWriteLock takes the database's write lock on a connection of a second store, as another
// process would, until the returned func is called.
func holdWriteLock(t *testing.T, url string) (release func()) {
	t.Helper()
	ctx := context.Background()
	b, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := b.db.Conn(ctx)
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		conn.Close()
		b.Close()
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
				t.Error(err)
			}
			conn.Close()
			b.Close()
		})
	}
	t.Cleanup(release)
	return release
}

// A SQLite database that takes no write (here full: SQLite's max_page_count caps it as a full
// disk would) reads as unavailable (503), not as our own fault (500), to the audit writer and to
// a write on the pool; once it has room again, writes go on.
func TestSQLiteFullIsUnavailable(t *testing.T) {
	ctx := context.Background()
	st, _ := openSQLite(t)
	st.db.SetMaxOpenConns(1) // one connection each, so the cap below holds for every write
	capPages := func(n string) {
		t.Helper()
		if _, err := st.db.ExecContext(ctx, "PRAGMA max_page_count = "+n); err != nil {
			t.Fatal(err)
		}
	}
	event := domain.AuditEvent{At: time.Now(), ActorUserID: domain.SystemActorID, Action: "principal.decrypt",
		TargetID: "t", Outcome: domain.OutcomeGranted, Detail: strings.Repeat("d", 500)}
	capPages("1") // SQLite keeps it at the file's current size
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		err = st.RecordAudit(ctx, event)
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("audit event into a full database: %v, want ErrUnavailable", err)
	}
	_, err = st.pool.Exec(ctx, `INSERT INTO partners (id, name) VALUES (?, ?)`, "00000000-0000-4000-8000-000000000001", strings.Repeat("p", 5000))
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("insert into a full database: %v, want ErrUnavailable", err)
	}

	capPages("1073741823")
	if err := st.RecordAudit(ctx, event); err != nil {
		t.Fatalf("audit event once there is room: %v", err)
	}
}

// openSQLite opens a migrated SQLite store in a folder of its own, its audit chain signed by
// testSigner, closed when the test ends; url names the file for other connections.
func openSQLite(t *testing.T) (s *Store, url string) {
	t.Helper()
	ctx := context.Background()
	url = "sqlite:" + t.TempDir() + "/store.db"
	s, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	s.SetChainSigner(testSigner{})
	return s, url
}

// The write probe of /readyz fails when the database cannot take an insert: here it is full
// (max_page_count caps it as a full disk would) with every page it has full too, so that a row
// rewritten in place would still fit while no insert does. Once it has room, the probe passes; it
// commits nothing, so the read cache stays valid.
func TestWritableNeedsRoomForAnInsert(t *testing.T) {
	ctx := context.Background()
	st, _ := openSQLite(t)
	st.db.SetMaxOpenConns(1) // one connection, so the cap below holds for the probe
	if err := st.Writable(ctx); err != nil {
		t.Fatalf("write probe with room: %v", err)
	}
	if _, err := st.db.ExecContext(ctx, `CREATE TABLE filler (b BLOB NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.db.ExecContext(ctx, "PRAGMA max_page_count = 1"); err != nil { // kept at the file's size
		t.Fatal(err)
	}
	var err error
	for i := 0; i < 10000 && err == nil; i++ { // fill every page, free ones included
		_, err = st.pool.Exec(ctx, `INSERT INTO filler (b) VALUES (?)`, make([]byte, 200))
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("filling the database: %v, want ErrUnavailable", err)
	}
	if err := st.Writable(ctx); !errors.Is(err, ErrUnavailable) {
		t.Errorf("write probe on a full database: %v, want ErrUnavailable", err)
	}
	if _, err := st.db.ExecContext(ctx, "PRAGMA max_page_count = 1073741823"); err != nil {
		t.Fatal(err)
	}
	before, err := st.cache.changes.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Writable(ctx); err != nil {
		t.Errorf("write probe once there is room again: %v", err)
	}
	if after, err := st.cache.changes.Version(ctx); err != nil || after != before {
		t.Errorf("the write probe moved the cache generation (%d to %d, %v): it emptied the read cache", before, after, err)
	}
}

// A caller whose request ends, before or after its event was handed to the audit writer, is
// told what became of the event, not that its request ended: the event is written anyway (the
// attempt was made), and a decrypt counted as an audit failure must be one whose event was not
// (an alert watches that count).
func TestRecordAuditAnswersWithTheCommitAfterTheCallerLeft(t *testing.T) {
	a, _ := openSQLite(t)
	sig := blockingSigner{inside: make(chan struct{}, 1), release: make(chan struct{})}
	a.SetChainSigner(sig)
	ctx, cancel := context.WithCancel(context.Background())
	recorded := make(chan error, 1)
	go func() {
		recorded <- a.RecordAudit(ctx, domain.AuditEvent{At: time.Now(), ActorUserID: "u", Action: "principal.decrypt", TargetID: "p", Outcome: domain.OutcomeGranted})
	}()
	<-sig.inside // the writer links the event: it was handed over
	cancel()
	select {
	case err := <-recorded:
		close(sig.release)
		t.Fatalf("RecordAudit answered %v before the commit, once its caller's context ended", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(sig.release)
	if err := <-recorded; err != nil {
		t.Fatalf("RecordAudit: %v, want the commit's outcome (nil)", err)
	}
	if err := a.RecordAudit(ctx, domain.AuditEvent{At: time.Now(), ActorUserID: "u", Action: "principal.decrypt", TargetID: "p", Outcome: domain.OutcomeGranted}); err != nil {
		t.Fatalf("RecordAudit of a caller already gone: %v, want the commit's outcome (nil)", err)
	}
	var n int
	if err := a.db.QueryRowContext(context.Background(), "SELECT count(*) FROM audit_events").Scan(&n); err != nil || n != 2 {
		t.Errorf("%d audit events (%v), want 2", n, err)
	}
}
