package push_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/gateway"
	"backoffice/internal/push"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// countingGateway answers the first attempt of every push 503 and the second 200, and counts the
// requests it was sent.
type countingGateway struct {
	mu   sync.Mutex
	puts int
}

func (g *countingGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.puts++
	n := g.puts
	g.mu.Unlock()
	if n%2 == 1 {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintf(w, `{"pushId":"p-%d"}`, n)
}

func (g *countingGateway) sent() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.puts
}

// pushRig is a push service over a real store loaded with the fixture, a counting gateway, and a
// clock the test moves.
type pushRig struct {
	st  *store.Store
	gw  *countingGateway
	svc *push.Service
	mu  sync.Mutex
	now time.Time
}

func newPushRig(t *testing.T, st *store.Store, wrap func(push.Store) push.Store) *pushRig {
	t.Helper()
	if _, err := dataset.Import(context.Background(), st, testdb.Fixture(), testdb.Ring(t)); err != nil {
		t.Fatal(err)
	}
	r := &pushRig{st: st, gw: &countingGateway{}, now: testdb.FixtureNow()}
	srv := httptest.NewServer(r.gw)
	t.Cleanup(srv.Close)
	var ps push.Store = st
	if wrap != nil {
		ps = wrap(st)
	}
	r.svc = push.New(push.Config{Store: ps, Gateway: gateway.New(gateway.Config{BaseURL: srv.URL, Timeout: 5 * time.Second}),
		Budget: 5 * time.Second, Now: r.clock})
	return r
}

func (r *pushRig) clock() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now
}

// pastTheLease moves the clock past any lease taken so far.
func (r *pushRig) pastTheLease() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.now = r.now.Add(r.svc.Lease() + time.Second)
}

func (r *pushRig) push() error {
	_, err := r.svc.Push(context.Background(), domain.Actor{UserID: testdb.StaffUser, Permissions: []domain.Permission{domain.PermAll}},
		testdb.OrderA, testdb.ItemA, "")
	return err
}

// pushNotes are the bodies of the push notes written, as an export reads them.
func (r *pushRig) pushNotes(t *testing.T) []string {
	t.Helper()
	var bodies []string
	for _, n := range testdb.Export(t, r.st, nil).MerchantNotes {
		if strings.HasPrefix(n.Body, "Device parameter push") {
			bodies = append(bodies, n.Body)
		}
	}
	return bodies
}

// refusing is a push's store over a database that refuses writes from just before the nth call
// of one of its methods on, until allow: every write of the push's store then fails as a read-only
// database makes it fail (store.ErrUnavailable, nothing written; the store's own tests hold that a
// read-only database is answered so), and reads are still answered.
type refusing struct {
	push.Store
	method string
	nth    int

	mu      sync.Mutex
	calls   map[string]int
	refused bool
}

func newRefusing(ps push.Store, method string, nth int) *refusing {
	return &refusing{Store: ps, method: method, nth: nth, calls: map[string]int{}}
}

var errReadOnly = fmt.Errorf("the database refuses writes: %w", store.ErrUnavailable)

// write counts a call of a writing method and tells whether the database refuses it.
func (f *refusing) write(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method]++
	if method == f.method && f.calls[method] == f.nth {
		f.refused = true
	}
	if f.refused {
		return errReadOnly
	}
	return nil
}

// allow has the database take writes again.
func (f *refusing) allow() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refused = false
}

func (f *refusing) AcquirePushLease(ctx context.Context, item domain.ID, holder string, now time.Time, ttl time.Duration) (bool, error) {
	if err := f.write("AcquirePushLease"); err != nil {
		return false, err
	}
	return f.Store.AcquirePushLease(ctx, item, holder, now, ttl)
}

func (f *refusing) ReleasePushLease(ctx context.Context, item domain.ID, holder string) error {
	if err := f.write("ReleasePushLease"); err != nil {
		return err
	}
	return f.Store.ReleasePushLease(ctx, item, holder)
}

func (f *refusing) BeginPush(ctx context.Context, r domain.PushRecord, noteOf func(domain.PushRecord) domain.MerchantNote) error {
	if err := f.write("BeginPush"); err != nil {
		return err
	}
	return f.Store.BeginPush(ctx, r, noteOf)
}

func (f *refusing) CountPushAttempt(ctx context.Context, item domain.ID, holder string) error {
	if err := f.write("CountPushAttempt"); err != nil {
		return err
	}
	return f.Store.CountPushAttempt(ctx, item, holder)
}

func (f *refusing) FinishPush(ctx context.Context, item domain.ID, holder string, note domain.MerchantNote) (bool, error) {
	if err := f.write("FinishPush"); err != nil {
		return false, err
	}
	return f.Store.FinishPush(ctx, item, holder, note)
}

func (f *refusing) NoteAbandonedPushes(ctx context.Context, now time.Time, noteOf func(domain.PushRecord) domain.MerchantNote) (int, error) {
	if err := f.write("NoteAbandonedPushes"); err != nil {
		return 0, err
	}
	return f.Store.NoteAbandonedPushes(ctx, now, noteOf)
}

// No request reaches the gateway unrecorded. The database refuses writes from each step of a push
// on (its lease, its record, the count of its first and of its second attempt, its note): the
// caller gets 503, and the gateway has seen exactly the attempts the record counts. Once the
// database takes writes again, the push left behind gets its note, counting those attempts: from
// the next push of the line item, or, if nobody pushes it, once its lease has expired. The process
// that ran it knows the outcome of a push whose note was refused, and notes that; another process
// knows the attempts only.
func TestNoGatewayRequestWithoutItsRecord(t *testing.T) {
	steps := []struct {
		method string
		nth    int
		sent   int  // requests the gateway has seen when the push fails
		noted  bool // the push is recorded: it gets a note
		kept   string
	}{
		{"AcquirePushLease", 1, 0, false, ""},
		{"BeginPush", 1, 0, false, ""},
		{"CountPushAttempt", 1, 0, true, ""},
		{"CountPushAttempt", 2, 1, true, ""},
		{"FinishPush", 1, 2, true, "succeeded after 2 attempt(s); gateway push id: p-2"},
	}
	for _, step := range steps {
		variants := []string{"pushed again", "nobody pushes", "another process notes"}
		if !step.noted {
			variants = variants[:1] // nothing recorded, nothing to note
		}
		for _, then := range variants {
			t.Run(fmt.Sprintf("%s %d %s", step.method, step.nth, then), func(t *testing.T) {
				testdb.ForEach(t, func(t *testing.T, st *store.Store) {
					var db *refusing
					r := newPushRig(t, st, func(ps push.Store) push.Store {
						db = newRefusing(ps, step.method, step.nth)
						return db
					})
					err := r.push()
					if !errors.Is(err, store.ErrUnavailable) {
						t.Fatalf("push into a database refusing writes: %v, want ErrUnavailable (503)", err)
					}
					if got := r.gw.sent(); got != step.sent {
						t.Fatalf("the gateway was sent %d request(s), want %d", got, step.sent)
					}
					if notes := r.pushNotes(t); len(notes) != 0 {
						t.Fatalf("notes written into a database refusing writes: %q", notes)
					}
					db.allow()
					// The lease could not be released: it runs out first.
					if n, err := r.svc.NoteAbandoned(context.Background()); err != nil || n != 0 {
						t.Fatalf("abandoned pushes noted while their lease runs: %d, %v", n, err)
					}
					r.pastTheLease()
					var want []string
					switch {
					case !step.noted:
					case step.kept != "" && then != "another process notes":
						want = append(want, step.kept)
					default:
						want = append(want, fmt.Sprintf("did not record its outcome (the service stopped, or the database refused the note): %d attempt(s) sent to the gateway", step.sent))
					}
					settler := r.svc
					if then == "another process notes" {
						settler = push.New(push.Config{Store: st, Budget: 5 * time.Second, Now: r.clock})
					}
					if then == "pushed again" {
						if err := r.push(); err != nil {
							t.Fatalf("push once the database takes writes: %v", err)
						}
						// The gateway fails every other request: the first of this push, unless the last
						// one sent was.
						want = append(want, fmt.Sprintf("succeeded after %d attempt(s)", 2-step.sent%2))
					} else if n, err := settler.NoteAbandoned(context.Background()); err != nil || n != len(want) {
						t.Fatalf("abandoned pushes noted once the lease expired: %d, %v; want %d", n, err, len(want))
					}
					notes := r.pushNotes(t)
					if len(notes) != len(want) {
						t.Fatalf("notes %q, want %q", notes, want)
					}
					for _, w := range want { // written at the same time by the test's clock: in no order
						if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, w) && strings.Contains(n, string(testdb.ItemA)) }) {
							t.Errorf("notes %q: none says %q", notes, w)
						}
					}
					if n, err := r.svc.NoteAbandoned(context.Background()); err != nil || n != 0 {
						t.Errorf("a record left after its note: %d noted again, %v", n, err)
					}
				})
			})
		}
	}
}
