package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

const rewrapCount = 3000

// assertKeyCounts compares the SSNs per key id with want.
func assertKeyCounts(t *testing.T, st *store.Store, want []store.KeyCount) {
	t.Helper()
	got, err := st.SSNKeyCounts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SSNs per key (-want +got):\n%s", diff)
	}
}

// assertAllOpenUnder exports with a ring of the given keys only: every SSN must open, to its own
// value, without any other key.
func assertAllOpenUnder(t *testing.T, st *store.Store, n int, ids ...string) {
	t.Helper()
	ds, err := dataset.Export(context.Background(), st, testdb.Ring(t, ids...))
	if err != nil {
		t.Fatalf("export with only keys %v: %v", ids, err)
	}
	if len(ds.Principals) != n {
		t.Fatalf("%d principals, want %d", len(ds.Principals), n)
	}
	for i, p := range ds.Principals {
		if p.SSN == nil || *p.SSN != testSSN(i) {
			t.Fatalf("principal %d does not open to its own SSN", i)
		}
	}
}

// checkDecrypt asks the API for principal i's SSN and checks the answer is exactly that SSN. It
// returns an error rather than failing the test, since clients run in their own goroutines.
func checkDecrypt(srv *httptest.Server, i int) error {
	status, body, err := get(nil, srv, decryptPath(testPrincipal(i)), "Api-Key "+testStaffKey)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("principal %d: status %d: %s", i, status, body)
	}
	var got struct{ SSN string }
	if err := json.Unmarshal(body, &got); err != nil {
		return fmt.Errorf("principal %d: %v", i, err)
	}
	if got.SSN != testSSN(i) {
		return fmt.Errorf("principal %d: got another SSN", i)
	}
	return nil
}

// decryptClients run decrypt requests through the real handler, round-robin over every principal,
// until stopped. After each right answer a client ticks, so the rewrap can wait for requests to be
// answered between its batches, while the data is half moved.
type decryptClients struct {
	ticks  chan struct{}
	failed chan struct{}
	stop   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
	err    error
}

func startDecryptClients(srv *httptest.Server, clients, principals int) *decryptClients {
	c := &decryptClients{ticks: make(chan struct{}, 64), failed: make(chan struct{}), stop: make(chan struct{})}
	for k := range clients {
		c.wg.Go(func() {
			for i := k; ; i = (i + clients) % principals {
				select {
				case <-c.stop:
					return
				default:
				}
				if err := checkDecrypt(srv, i); err != nil {
					c.once.Do(func() { c.err = err; close(c.failed) })
					return
				}
				select {
				case c.ticks <- struct{}{}:
				default:
				}
			}
		})
	}
	return c
}

// awaitFresh waits until n requests have been answered since it was called, or a client failed.
func (c *decryptClients) awaitFresh(n int) {
	for drained := false; !drained; {
		select {
		case <-c.ticks:
		default:
			drained = true
		}
	}
	for range n {
		select {
		case <-c.ticks:
		case <-c.failed:
			return
		}
	}
}

func (c *decryptClients) finish() error {
	close(c.stop)
	c.wg.Wait()
	return c.err
}

// Rotation under load: thousands of SSNs move from the old key to the new one while decrypt
// requests run through the real handler; every answer is right, and at the end the old key seals
// nothing and can be dropped from the ring.
func TestRewrapWhileServingDecrypts(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	importDataset(t, st, testDataset(rewrapCount), testdb.Ring(t, "old"))
	ring := testdb.Ring(t, "new", "old")
	srv, _ := serveAPI(t, st, ring)

	const clients = 8
	c := startDecryptClients(srv, clients, rewrapCount)
	totals, err := rewrapAll(context.Background(), st, ring, 100, func(store.RewrapBatch, rewrapTotals) {
		c.awaitFresh(clients) // requests answered while the data is half moved
	})
	if clientErr := c.finish(); clientErr != nil {
		t.Fatalf("a decrypt during the rewrap: %v", clientErr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if totals.Moved != rewrapCount || totals.Changed != 0 || len(totals.Failed) != 0 || totals.Batches != rewrapCount/100 {
		t.Errorf("totals = %+v; want all %d moved in %d batches", totals, rewrapCount, rewrapCount/100)
	}
	assertKeyCounts(t, st, []store.KeyCount{{KeyID: "new", Values: rewrapCount}})
	assertAllOpenUnder(t, st, rewrapCount, "new")
}

// An interrupted rewrap leaves every value readable, and the next run finishes the job.
func TestRewrapResumesAfterInterruption(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	importDataset(t, st, testDataset(rewrapCount), testdb.Ring(t, "old"))
	ring := testdb.Ring(t, "new", "old")

	ctx, cancel := context.WithCancel(context.Background())
	batches := 0
	totals, err := rewrapAll(ctx, st, ring, 100, func(store.RewrapBatch, rewrapTotals) {
		if batches++; batches == 3 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || totals.Moved != 300 {
		t.Fatalf("interrupted run: moved %d, %v; want 300, context.Canceled", totals.Moved, err)
	}
	assertKeyCounts(t, st, []store.KeyCount{{KeyID: "new", Values: 300}, {KeyID: "old", Values: rewrapCount - 300}})
	assertAllOpenUnder(t, st, rewrapCount, "new", "old")

	totals, err = rewrapAll(context.Background(), st, ring, 100, nil)
	if err != nil || totals.Moved != rewrapCount-300 {
		t.Fatalf("second run: moved %d, %v; want %d", totals.Moved, err, rewrapCount-300)
	}
	assertKeyCounts(t, st, []store.KeyCount{{KeyID: "new", Values: rewrapCount}})
	assertAllOpenUnder(t, st, rewrapCount, "new")
}

// cancellingRing cancels the run after a number of values were sealed: an interruption in the
// middle of a batch's transaction.
type cancellingRing struct {
	store.Rekeyer
	after  int
	cancel context.CancelFunc
}

func (r *cancellingRing) Seal(plaintext, aad []byte) (string, []byte) {
	if r.after--; r.after == 0 {
		r.cancel()
	}
	return r.Rekeyer.Seal(plaintext, aad)
}

// A batch cut short rolls back whole: no value is half moved, and nothing is counted twice.
func TestRewrapInterruptedMidBatchRollsBackThatBatch(t *testing.T) {
	const n = 500
	st := testdb.Open(t, "sqlite")
	importDataset(t, st, testDataset(n), testdb.Ring(t, "old"))
	ring := testdb.Ring(t, "new", "old")

	ctx, cancel := context.WithCancel(context.Background())
	totals, err := rewrapAll(ctx, st, &cancellingRing{Rekeyer: ring, after: 250, cancel: cancel}, 100, nil)
	if !errors.Is(err, context.Canceled) || totals.Moved != 200 {
		t.Fatalf("interrupted run: moved %d, %v; want 200 (two whole batches), context.Canceled", totals.Moved, err)
	}
	assertKeyCounts(t, st, []store.KeyCount{{KeyID: "new", Values: 200}, {KeyID: "old", Values: n - 200}})

	if totals, err = rewrapAll(context.Background(), st, ring, 100, nil); err != nil || totals.Moved != n-200 {
		t.Fatalf("second run: moved %d, %v; want %d", totals.Moved, err, n-200)
	}
	assertAllOpenUnder(t, st, n, "new")
}

// copySSN puts principal from's stored ciphertext (and its key id) into principal to's row, as an
// attacker with write access to the database, or a bad migration, might.
func copySSN(t *testing.T, st *store.Store, from, to domain.ID) {
	t.Helper()
	_, err := testdb.SQLOf(t, st).ExecContext(context.Background(),
		`UPDATE principals SET ssn_key_id = (SELECT ssn_key_id FROM principals WHERE id = ?), ssn_sealed = (SELECT ssn_sealed FROM principals WHERE id = ?) WHERE id = ?`,
		from, from, to)
	if err != nil {
		t.Fatal(err)
	}
}

// errorCode reads the code of an error body.
func errorCode(t *testing.T, body []byte) string {
	t.Helper()
	var e struct{ Code string }
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return e.Code
}

// The associated data binds a ciphertext to its principal: moved to another principal's row, it
// does not open, and the answer is a 500, never the other person's SSN.
func TestMovedCiphertextDoesNotDecrypt(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	importDataset(t, st, testDataset(2), testdb.Ring(t, "k1"))
	copySSN(t, st, testPrincipal(0), testPrincipal(1))
	srv, logs := serveAPI(t, st, testdb.Ring(t, "k1"))

	status, body, err := get(t, srv, decryptPath(testPrincipal(1)), "Api-Key "+testStaffKey)
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusInternalServerError || errorCode(t, body) != "internal" {
		t.Errorf("decrypt of a moved ciphertext: %d %s; want 500 internal", status, body)
	}
	if strings.Contains(string(body), testSSN(0)) || strings.Contains(logs.String(), testSSN(0)) {
		t.Error("the other principal's SSN leaked into the answer or the log")
	}
	if err := checkDecrypt(srv, 0); err != nil {
		t.Errorf("the original still decrypts: %v", err)
	}
}

// A ciphertext under a key the ring lacks answers 500 internal, and the log names the key id so an
// operator knows which key to add back.
func TestDecryptUnderMissingKey(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	importDataset(t, st, testDataset(1), testdb.Ring(t, "retired"))
	srv, logs := serveAPI(t, st, testdb.Ring(t, "current"))

	status, body, err := get(t, srv, decryptPath(testPrincipal(0)), "Api-Key "+testStaffKey)
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusInternalServerError || errorCode(t, body) != "internal" {
		t.Errorf("decrypt under a missing key: %d %s; want 500 internal", status, body)
	}
	if strings.Contains(string(body), "retired") {
		t.Errorf("the answer names the key: %s", body)
	}
	if !strings.Contains(logs.String(), `"key_id":"retired"`) {
		t.Errorf("the log does not name the missing key id:\n%s", logs)
	}
}

// keys status and keys rewrap through the command line: counts, the summary, the audit event.
func TestKeysCommands(t *testing.T) {
	url := testdb.URL(t, "sqlite")
	c := newCLI(t, url, "old")
	c.importFile(testDataset(40))

	c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("new", "old")
	status := squash(c.mustRun("keys", "status"))
	for _, want := range []string{"new active 0", "old in ring 40", "40 SSNs still use key old"} {
		if !strings.Contains(status, want) {
			t.Errorf("keys status lacks %q:\n%s", want, status)
		}
	}
	out := c.mustRun("keys", "rewrap", "--batch", "7")
	if want := "moved 40 SSNs to key new; still under old keys: none\n"; out != want {
		t.Errorf("keys rewrap printed %q, want %q", out, want)
	}
	if out := c.mustRun("keys", "rewrap"); !strings.HasPrefix(out, "moved 0 SSNs") {
		t.Errorf("a second rewrap printed %q; want nothing moved", out)
	}
	if status := c.mustRun("keys", "status"); !strings.Contains(status, "Nothing needs key old any more") {
		t.Errorf("keys status after rewrap:\n%s", status)
	}

	c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("newest")
	// A key missing from the ring is a failure, not only a warning: scripts and checks stop on it.
	status, _, err := c.run("keys", "status")
	if status := squash(status); !strings.Contains(status, "new MISSING 40") || !strings.Contains(status, "WARNING") {
		t.Errorf("keys status with the data's key missing from the ring:\n%s", status)
	}
	if err == nil || !strings.Contains(err.Error(), "40 SSNs are sealed under keys missing from the ring (new)") || errors.Is(err, ErrUsage) {
		t.Errorf("keys status with a key missing: %v; want an error naming the key (exit 1)", err)
	}
	if !strings.Contains(status, `audit links (seq 1 to 5) are made under key new, which is not in the ring`) || !strings.Contains(err.Error(), "the audit trail names keys missing from the ring") {
		t.Errorf("keys status does not name the trail's key missing from the ring:\n%s\n%v", status, err)
	}
	// Without the key of the trail's links, rewrap cannot verify the trail, so it anchors nothing
	// and changes nothing.
	if _, _, err := c.run("keys", "rewrap"); !errors.Is(err, ErrCannotCheck) || !strings.Contains(err.Error(), "keys rewrap refused, nothing was changed") {
		t.Errorf("rewrap without the trail's key: %v; want it refused, cannot check", err)
	}

	// Each run is on record twice: when it starts (before it changes anything) and when it ends.
	c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("new")
	events := auditEvents(t, c, actionKeysRewrap)
	if len(events) != 4 || events[0].TargetID != "new" || events[0].ActorUserID != domain.SystemActorID ||
		!strings.HasPrefix(events[0].Detail, "started") || !strings.HasPrefix(events[1].Detail, "moved 40") {
		t.Errorf("rewrap audit events = %+v; want 4 by the system actor, the first two the first run's, targeting key new", events)
	}
}

// squash collapses runs of spaces, so table checks do not depend on column widths.
func squash(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

// auditEvents exports the database through the command line and returns the events of an action.
func auditEvents(t *testing.T, c *cli, action string) []domain.AuditEvent {
	t.Helper()
	var ds struct{ AuditEvents []domain.AuditEvent }
	if err := json.Unmarshal([]byte(c.mustRun("export", "-")), &ds); err != nil {
		t.Fatal(err)
	}
	var out []domain.AuditEvent
	for _, e := range ds.AuditEvents {
		if e.Action == action {
			out = append(out, e)
		}
	}
	return out
}
