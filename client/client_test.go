package client_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"backoffice/client"
	"backoffice/internal/api"
	"backoffice/internal/app"
	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/gateway"
	"backoffice/internal/push"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// The demo dataset's records (internal/app/demo.go), which the README's examples use too.
const (
	lead      = "00000000-0000-4000-8000-000000000301"
	principal = "00000000-0000-4000-8000-000000000401"
	merchant  = "00000000-0000-4000-8000-000000000501"
	document  = "00000000-0000-4000-8000-000000000601"
	// otherDocument is the demo merchant's second document.
	otherDocument = "00000000-0000-4000-8000-000000000602"
	order         = "00000000-0000-4000-8000-000000000801"
	lineItem      = "00000000-0000-4000-8000-000000001101"
	terminalID    = "TID/DEMO 0001"
	staffUser     = "00000000-0000-4000-8000-000000000101"

	sessionToken = "client-test-session-token-0001"
	partnerKey   = "demo-partner-api-key-not-for-production" // SAM logs of another partner only
	demoSAMLogs  = 45
	bigSamID     = 1<<24 + 1 // the first integer a float32 cannot hold
)

var now = time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)

// service is the real service in-process: api.New over a real store loaded with the demo
// dataset, pushing to a gateway simulator.
type service struct {
	handler http.Handler
	sim     *gateway.Simulator
}

func newService(t *testing.T, st *store.Store, limits api.Limits) *service {
	t.Helper()
	ring := testdb.Ring(t)
	ds := app.DemoDataset(now)
	ds.Sessions = append(ds.Sessions, domain.Session{ID: "00000000-0000-4000-8000-000000000129", UserID: staffUser,
		Token: sessionToken, ExpiresAt: now.AddDate(10, 0, 0)})
	ds.SAMActionLogs = append(ds.SAMActionLogs, domain.SAMActionLog{ID: "00000000-0000-4000-8000-000000009999",
		EntityID: merchant, Action: "board_merchant", ActionDate: now, SamID: bigSamID})
	if _, err := dataset.Import(context.Background(), st, ds, ring); err != nil {
		t.Fatalf("import: %v", err)
	}
	sim := gateway.NewSimulator(gateway.SimOptions{Token: "gw-token"})
	gw := httptest.NewServer(sim)
	t.Cleanup(gw.Close)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := push.New(push.Config{Store: st, Logger: log, Budget: 5 * time.Second,
		Gateway: gateway.New(gateway.Config{BaseURL: gw.URL, Token: "gw-token", Timeout: 5 * time.Second})})
	return &service{handler: api.New(api.Deps{Store: st, Ring: ring, Pusher: p, Logger: log, Limits: limits}), sim: sim}
}

// serve starts an HTTP server around the service.
func (s *service) serve(t *testing.T) string {
	srv := httptest.NewServer(s.handler)
	t.Cleanup(srv.Close)
	return srv.URL
}

// recorder is a transport that remembers what was sent and answered.
type recorder struct {
	next      http.RoundTripper
	mu        sync.Mutex
	sent      []*http.Request
	got       []int
	responses []http.Header
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := r.next.RoundTrip(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, req)
	if err == nil {
		r.got = append(r.got, res.StatusCode)
		r.responses = append(r.responses, res.Header)
	}
	return res, err
}

func (r *recorder) statuses() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.got...)
}

func newClient(t *testing.T, base string, rt http.RoundTripper, opts ...client.Option) *client.Client {
	t.Helper()
	opts = append([]client.Option{client.WithHTTPClient(&http.Client{Transport: rt})}, opts...)
	c, err := client.New(base, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wantError(t *testing.T, err error, status int, code string) {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want *client.Error", err, err)
	}
	if e.Status != status || e.Code != code || e.Detail == "" {
		t.Fatalf("error %+v, want %d %s", e, status, code)
	}
}

func TestOperations(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		svc := newService(t, st, api.Limits{})
		rec := &recorder{next: http.DefaultTransport}
		c := newClient(t, svc.serve(t), rec, client.WithAPIKey(app.DemoAPIKey))
		ctx := context.Background()

		sa, err := c.ServiceAcceptance(ctx, lead)
		if err != nil {
			t.Fatal(err)
		}
		if !sa.Configured || len(sa.CardPlans) != 4 || sa.CardPlans[0].SortOrder != 1 || !sa.CardPlans[0].Selected || sa.CardPlans[2].Selected {
			t.Errorf("service acceptance %+v", sa)
		}

		ssn, err := c.DecryptPrincipalSSN(ctx, lead, principal)
		if err != nil {
			t.Fatal(err)
		}
		if ssn.Reveal() != "123-45-6789" {
			t.Errorf("SSN %q", ssn.Reveal())
		}
		if s := fmt.Sprintf("%v %s %+v", ssn, ssn, struct{ S client.SSN }{ssn}); s != "[REDACTED] [REDACTED] {S:[REDACTED]}" {
			t.Errorf("an SSN printed as %q", s)
		}

		li, err := c.PushDeviceParameters(ctx, order, lineItem, client.WithIdempotencyKey("push-0001"))
		if err != nil {
			t.Fatal(err)
		}
		if li.ID != lineItem || li.Equipment == nil || li.Equipment.VendorTerminalID == nil || *li.Equipment.VendorTerminalID != terminalID {
			t.Errorf("line item %+v", li)
		}
		if _, ok := svc.sim.Last(terminalID); !ok {
			t.Errorf("the gateway received no parameters")
		}
		if k := rec.sent[len(rec.sent)-1].Header.Get("Idempotency-Key"); k != "push-0001" {
			t.Errorf("Idempotency-Key %q", k)
		}
		// The same key again: the kept answer, not a second push.
		again, err := c.PushDeviceParameters(ctx, order, lineItem, client.WithIdempotencyKey("push-0001"))
		if err != nil || again.ID != lineItem {
			t.Fatalf("repeated push: %+v, %v", again, err)
		}
		if r := rec.responses[len(rec.responses)-1]; r.Get("Idempotent-Replayed") != "true" {
			t.Errorf("the repeated push was not a replay: %v", r)
		}

		var res client.Response
		if err := c.DeleteMerchantDocument(ctx, merchant, document, client.WithIdempotencyKey("delete-0001"), client.WithResponse(&res)); err != nil || res.IdempotentReplayed() {
			t.Fatalf("delete: %v, replayed %v", err, res.IdempotentReplayed())
		}
		// Its answer lost, the deletion is sent again with its key: it succeeds, replayed.
		if err := c.DeleteMerchantDocument(ctx, merchant, document, client.WithIdempotencyKey("delete-0001"), client.WithResponse(&res)); err != nil || !res.IdempotentReplayed() {
			t.Fatalf("repeated delete: %v, replayed %v", err, res.IdempotentReplayed())
		}
		wantError(t, c.DeleteMerchantDocument(ctx, merchant, document), http.StatusNotFound, "not_found")
		wantError(t, c.DeleteMerchantDocument(ctx, merchant, otherDocument, client.WithIdempotencyKey("delete-0001")), http.StatusConflict, "idempotency_key_reused")

		// A session token works as well as a key.
		bearer := newClient(t, svc.serve(t), http.DefaultTransport, client.WithBearerToken(sessionToken))
		if _, err := bearer.ServiceAcceptance(ctx, lead); err != nil {
			t.Fatalf("bearer: %v", err)
		}
	})
}

func TestErrors(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		base := newService(t, st, api.Limits{}).serve(t)
		ctx := context.Background()
		staff := newClient(t, base, http.DefaultTransport, client.WithAPIKey(app.DemoAPIKey))
		_, err := newClient(t, base, http.DefaultTransport, client.WithAPIKey("no-such-key-0000000000")).ServiceAcceptance(ctx, lead)
		wantError(t, err, http.StatusUnauthorized, "unauthenticated")
		_, err = newClient(t, base, http.DefaultTransport).ServiceAcceptance(ctx, lead)
		wantError(t, err, http.StatusUnauthorized, "unauthenticated")
		_, err = staff.ServiceAcceptance(ctx, "not-a-uuid")
		wantError(t, err, http.StatusBadRequest, "invalid_parameter")
		if e := new(client.Error); !errors.As(err, &e) || e.Parameter != "leadId" {
			t.Errorf("400's parameter: %+v", err)
		}
		_, err = staff.ListSAMActionLogs(ctx, lead, 1, 101)
		if e := new(client.Error); !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Parameter != "size" {
			t.Errorf("size 101: %v, parameter %q", err, e.Parameter)
		}
		_, err = staff.DecryptPrincipalSSN(ctx, lead, "00000000-0000-4000-8000-000000000402") // no SSN on file
		if e := new(client.Error); !errors.As(err, &e) || e.Parameter != "" {
			t.Errorf("a 404 names a parameter: %+v", err)
		}
		_, err = newClient(t, base, http.DefaultTransport, client.WithAPIKey(partnerKey)).ServiceAcceptance(ctx, lead)
		wantError(t, err, http.StatusForbidden, "forbidden")
		_, err = staff.DecryptPrincipalSSN(ctx, lead, "00000000-0000-4000-8000-000000000402") // no SSN on file
		wantError(t, err, http.StatusNotFound, "not_found")
		// An id holding "/" stays one path segment.
		_, err = staff.ServiceAcceptance(ctx, lead+"/service-acceptance")
		wantError(t, err, http.StatusBadRequest, "invalid_parameter")
	})
}

// A proxy's answer that is not the error body is still an *Error, with an empty code.
func TestAnswerThatIsNotTheErrorBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
	}))
	defer srv.Close()
	_, err := newClient(t, srv.URL, http.DefaultTransport).ServiceAcceptance(context.Background(), lead)
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusBadGateway || e.Code != "" || e.Detail == "" {
		t.Fatalf("error %#v", err)
	}
}

func TestSAMActionLogs(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		rec := &recorder{next: http.DefaultTransport}
		c := newClient(t, newService(t, st, api.Limits{}).serve(t), rec, client.WithAPIKey(app.DemoAPIKey))
		ctx := context.Background()

		var logs []client.SAMActionLog
		for l, err := range c.SAMActionLogs(ctx, lead, 7) {
			if err != nil {
				t.Fatal(err)
			}
			logs = append(logs, l)
		}
		if len(logs) != demoSAMLogs {
			t.Fatalf("%d logs, want %d", len(logs), demoSAMLogs)
		}
		seen := map[string]bool{}
		for i, l := range logs {
			if seen[l.ID] || (i > 0 && l.ActionDate.After(logs[i-1].ActionDate)) {
				t.Fatalf("log %d (%s) repeated or out of order", i, l.ID)
			}
			seen[l.ID] = true
		}
		if n := len(rec.statuses()); n != 7 { // ceil(45 / 7): up to meta.page == meta.totalPages
			t.Errorf("%d pages requested, want 7", n)
		}

		// Stopping early requests no further page.
		before := len(rec.statuses())
		for range c.SAMActionLogs(ctx, lead, 5) {
			break
		}
		if n := len(rec.statuses()) - before; n != 1 {
			t.Errorf("%d requests for one log", n)
		}

		// An error is yielded once and ends the iteration.
		var errs int
		for _, err := range c.SAMActionLogs(ctx, "00000000-0000-4000-8000-000000000999", 5) {
			wantError(t, err, http.StatusNotFound, "not_found")
			errs++
		}
		if errs != 1 {
			t.Errorf("%d errors yielded", errs)
		}

		// samId is a 64-bit integer end to end.
		p, err := c.ListSAMActionLogs(ctx, merchant, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Data) != 1 || p.Data[0].SamID != bigSamID || p.Meta != (client.PageMeta{Page: 1, PerPage: 20, TotalCount: 1, TotalPages: 1}) {
			t.Fatalf("page %+v", p)
		}
	})
}

// clock is the service's rate-limit clock, moved by the client's waits.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// sleep is the client's wait on the fake clock: it records the wait and moves the clock.
func (c *clock) sleep(waits *[]time.Duration) func(context.Context, time.Duration) error {
	return func(ctx context.Context, d time.Duration) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		*waits = append(*waits, d)
		c.t = c.t.Add(d)
		return nil
	}
}

// On a 429 the client waits for Retry-After and tries again, within the caller's context.
func TestRateLimitedCallsWaitAndRetry(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		clk := &clock{t: now}
		// One request per second, two at once.
		svc := newService(t, st, api.Limits{Rate: 1, Burst: 2, Now: clk.now})
		base := svc.serve(t)
		rec := &recorder{next: http.DefaultTransport}
		var waits []time.Duration
		c := newClient(t, base, rec, client.WithAPIKey(app.DemoAPIKey))
		client.SetSleep(c, clk.sleep(&waits))
		ctx := context.Background()
		for i := range 3 {
			if _, err := c.ServiceAcceptance(ctx, lead); err != nil {
				t.Fatalf("call %d: %v", i+1, err)
			}
		}
		if got, want := rec.statuses(), []int{200, 200, 429, 200}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("answers %v, want %v", got, want)
		}
		if fmt.Sprint(waits) != "[1s]" {
			t.Errorf("waits %v, want the Retry-After of 1s", waits)
		}

		// A context that ends before Retry-After: the 429 is the answer, without a wait.
		short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		_, err := c.ServiceAcceptance(short, lead)
		wantError(t, err, http.StatusTooManyRequests, "rate_limited")
		// A context canceled before the wait ends: its error.
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := c.ServiceAcceptance(canceled, lead); !errors.Is(err, context.Canceled) {
			t.Errorf("canceled: %v", err)
		}
		if fmt.Sprint(waits) != "[1s]" {
			t.Errorf("waits %v: a call waited beyond its context", waits)
		}

		// Retries can be turned off.
		once := newClient(t, base, http.DefaultTransport, client.WithAPIKey(app.DemoAPIKey), client.WithRateLimitRetries(0))
		client.SetSleep(once, clk.sleep(&waits))
		_, err = once.ServiceAcceptance(ctx, lead)
		wantError(t, err, http.StatusTooManyRequests, "rate_limited")
	})
}

// A call's answer headers reach the caller through WithResponse, errors or not, and an error
// carries its Retry-After.
func TestResponseHeaders(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		clk := &clock{t: now}
		base := newService(t, st, api.Limits{Rate: 1, Burst: 2, Now: clk.now}).serve(t)
		c := newClient(t, base, http.DefaultTransport, client.WithAPIKey(app.DemoAPIKey), client.WithRateLimitRetries(0))
		ctx := context.Background()

		var r client.Response
		if _, err := c.ServiceAcceptance(ctx, lead, client.WithResponse(&r)); err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusOK || r.RateLimitPolicy() != `"credential";q=2;w=2` || r.RateLimit() != `"credential";r=1;t=1` || r.RequestID() == "" {
			t.Errorf("response %d, RateLimit-Policy %q, RateLimit %q, X-Request-Id %q", r.Status, r.RateLimitPolicy(), r.RateLimit(), r.RequestID())
		}
		if _, err := c.PushDeviceParameters(ctx, order, lineItem, client.WithIdempotencyKey("k-1"), client.WithResponse(&r)); err != nil || r.IdempotentReplayed() {
			t.Fatalf("first push: %v, replayed %v", err, r.IdempotentReplayed())
		}
		// Over the rate: the 429 (not waited out) carries its Retry-After, in the error and the response.
		var limited client.Response
		_, err := c.PushDeviceParameters(ctx, order, lineItem, client.WithIdempotencyKey("k-1"), client.WithResponse(&limited))
		wantError(t, err, http.StatusTooManyRequests, "rate_limited")
		var e *client.Error
		errors.As(err, &e)
		wait, ok := limited.RetryAfter()
		if e.RetryAfter < time.Second || !ok || wait != e.RetryAfter || e.Header.Get("RateLimit") == "" || limited.Status != http.StatusTooManyRequests {
			t.Errorf("429: RetryAfter %v, response %d %v %v, header %v", e.RetryAfter, limited.Status, wait, ok, e.Header)
		}

		// The repeated push, once the rate allows, is the kept answer.
		clk.mu.Lock()
		clk.t = clk.t.Add(time.Minute)
		clk.mu.Unlock()
		patient := newClient(t, base, http.DefaultTransport, client.WithAPIKey(app.DemoAPIKey))
		if _, err := patient.PushDeviceParameters(ctx, order, lineItem, client.WithIdempotencyKey("k-1"), client.WithResponse(&r)); err != nil || !r.IdempotentReplayed() {
			t.Fatalf("repeated push: %v, replayed %v", err, r.IdempotentReplayed())
		}

		// Another push of the line item running: 409 push_in_progress with when to come back.
		if ok, err := st.AcquirePushLease(ctx, domain.ID(lineItem), "another-process", time.Now(), time.Minute); !ok || err != nil {
			t.Fatalf("lease: %v %v", ok, err)
		}
		_, err = patient.PushDeviceParameters(ctx, order, lineItem)
		wantError(t, err, http.StatusConflict, "push_in_progress")
		if errors.As(err, &e); e.RetryAfter < time.Second || e.RetryAfter > 30*time.Second {
			t.Errorf("push_in_progress: RetryAfter %v, want what the minute's lease leaves of the budget", e.RetryAfter)
		}
	})
}

// AuditEvents yields every event once, newest first, though each page it reads records an event
// that pushes the others down.
func TestAuditEvents(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		base := newService(t, st, api.Limits{}).serve(t)
		c := newClient(t, base, http.DefaultTransport, client.WithAPIKey(app.DemoAPIKey))
		ctx := context.Background()
		for range 5 {
			if _, err := c.DecryptPrincipalSSN(ctx, lead, principal); err != nil {
				t.Fatal(err)
			}
		}
		before, err := c.ListAuditEvents(ctx, client.AuditFilter{}, 1, 100)
		if err != nil {
			t.Fatal(err)
		}
		var got []client.AuditEvent
		for e, err := range c.AuditEvents(ctx, client.AuditFilter{}, 2) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e)
		}
		seen := map[int64]bool{}
		for i, e := range got {
			if i > 0 && e.Seq >= got[i-1].Seq {
				t.Fatalf("event %d (seq %d) after seq %d: repeated or out of order", i, e.Seq, got[i-1].Seq)
			}
			seen[e.Seq] = true
		}
		for _, e := range before.Data {
			if !seen[e.Seq] {
				t.Errorf("event seq %d (%s) was not yielded", e.Seq, e.Action)
			}
		}

		// Filtered: the decrypts alone, with their chain links.
		var decrypts int
		for e, err := range c.AuditEvents(ctx, client.AuditFilter{Action: "principal.decrypt", TargetID: principal, From: now.AddDate(-1, 0, 0)}, 2) {
			if err != nil {
				t.Fatal(err)
			}
			if e.Action != "principal.decrypt" || e.Outcome != "granted" || e.ActorUserID != staffUser || len(e.Hash) != 64 {
				t.Errorf("event %+v", e)
			}
			decrypts++
		}
		if decrypts != 5 {
			t.Errorf("%d decrypt events, want 5", decrypts)
		}
		// A partner's user may not read the trail.
		for _, err := range newClient(t, base, http.DefaultTransport, client.WithAPIKey(partnerKey)).AuditEvents(ctx, client.AuditFilter{}, 0) {
			wantError(t, err, http.StatusForbidden, "forbidden")
		}
	})
}

// signedTree signs the store's tree as it is when asked: the newest checkpoint, for the proofs.
type signedTree struct {
	st     *store.Store
	signer note.Signer
}

func (s signedTree) LatestCheckpoint() ([]byte, bool) {
	ctx := context.Background()
	size, err := s.st.AuditTreeSize(ctx)
	if err != nil {
		return nil, false
	}
	root, err := tlog.TreeHash(size, s.st.AuditHashReader(ctx))
	if err != nil {
		return nil, false
	}
	msg, err := note.Sign(&note.Note{Text: fmt.Sprintf("backoffice.test/audit\n%d\n%s\n", size, base64.StdEncoding.EncodeToString(root[:]))}, s.signer)
	return msg, err == nil
}

func TestAuditProofAndTiles(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		svc := newService(t, st, api.Limits{})
		skey, _, err := note.GenerateKey(rand.Reader, "backoffice.test/audit")
		if err != nil {
			t.Fatal(err)
		}
		signer, _ := note.NewSigner(skey)
		deps := api.Deps{Store: st, Ring: testdb.Ring(t), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Checkpoints: signedTree{st, signer}}
		svc.handler = api.New(deps)
		c := newClient(t, svc.serve(t), http.DefaultTransport, client.WithAPIKey(app.DemoAPIKey))
		ctx := context.Background()
		if _, err := c.DecryptPrincipalSSN(ctx, lead, principal); err != nil {
			t.Fatal(err)
		}
		page, err := c.ListAuditEvents(ctx, client.AuditFilter{Action: "principal.decrypt"}, 1, 1)
		if err != nil || len(page.Data) != 1 {
			t.Fatalf("the decrypt's event: %v", err)
		}
		p, err := c.AuditEventProof(ctx, page.Data[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if p.Event.ID != page.Data[0].ID || !strings.HasPrefix(p.Proof, "c2sp.org/tlog-proof@v1\nextra ") {
			t.Fatalf("proof %+v", p)
		}
		size, err := st.AuditTreeSize(ctx)
		if err != nil || size < 2 || size > 255 {
			t.Fatalf("tree of %d: %v", size, err)
		}
		tile, err := c.AuditLogTile(ctx, fmt.Sprintf("0/000.p/%d", size))
		if err != nil || len(tile) != int(size)*tlog.HashSize {
			t.Fatalf("level 0 tile: %d bytes, %v", len(tile), err)
		}
		var ce *client.Error
		if _, err := c.AuditLogTile(ctx, "0/000"); !errors.As(err, &ce) || ce.Status != http.StatusNotFound {
			t.Fatalf("a tile past the tree: %v", err)
		}
		if _, err := c.AuditLogTile(ctx, "0/1"); !errors.As(err, &ce) || ce.Status != http.StatusBadRequest || ce.Parameter != "index" {
			t.Fatalf("a malformed tile: %v", err)
		}
		if _, err := c.AuditLogTile(ctx, "0/000?x"); err == nil {
			t.Fatal("a path with a query")
		}
	})
}
