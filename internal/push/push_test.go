package push

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"backoffice/internal/domain"
	"backoffice/internal/gateway"
)

const fileBuild = `{
  "tips": {"enabled": true, "presetsPercent": [15, 20], "allowCustom": true},
  "tax": {"enabled": true, "ratePercent": "8.250"},
  "avs": {"enabled": true, "mode": "zip"},
  "receipt": {"merchantCopy": true, "customerCopy": "prompt", "headerLines": [], "footerLines": []},
  "transactions": {"sale": true, "refund": true, "void": true, "preAuth": false, "manualEntry": false, "cashBack": false},
  "autoBatch": {"enabled": true, "time": "23:30"}
}`

var (
	orderID  = domain.ID("00000000-0000-4000-8000-000000000801")
	itemID   = domain.ID("00000000-0000-4000-8000-000000001101")
	merchant = domain.ID("00000000-0000-4000-8000-000000000501")
	pusher   = domain.Actor{UserID: "00000000-0000-4000-8000-000000000001", Permissions: []domain.Permission{domain.PermAll}}
)

// source is a line item that passes every precondition.
func source() *domain.PushSource {
	tid := "TID/0001"
	return &domain.PushSource{
		MerchantID: merchant,
		Workflow:   domain.WorkflowGateway,
		View: domain.LineItemView{
			LineItem:  domain.LineItem{ID: itemID, OrderID: orderID, Status: "deployed"},
			Equipment: &domain.EquipmentView{Equipment: domain.Equipment{VendorTerminalID: &tid}},
			Varsheet:  &domain.Varsheet{VNumber: "V1"},
		},
		FileBuild: json.RawMessage(fileBuild),
		Pricing:   &domain.PricingModel{Type: "standard"},
	}
}

// fakeStore is a push's database: one line item, the lease and the notes.
type fakeStore struct {
	mu     sync.Mutex
	src    *domain.PushSource
	leased bool
	leases int
	// expires is when the held lease expires; zero: it was released after the refusal.
	expires time.Time
	notes   []domain.MerchantNote
	noteCtx context.Context
}

func (f *fakeStore) PushSource(_ context.Context, _ domain.Scope, order, item domain.ID) (*domain.PushSource, error) {
	if f.src == nil || order != orderID || item != itemID {
		return nil, domain.ErrNotFound
	}
	return f.src, nil
}

func (f *fakeStore) AcquirePushLease(context.Context, domain.ID, string, time.Time, time.Duration) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.leased {
		return false, nil
	}
	f.leased = true
	f.leases++
	return true, nil
}

func (f *fakeStore) PushLeaseExpiry(context.Context, domain.ID) (time.Time, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.expires, !f.expires.IsZero(), nil
}

func (f *fakeStore) ReleasePushLease(context.Context, domain.ID, string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leased = false
	return nil
}

func (f *fakeStore) BeginPush(context.Context, domain.PushRecord, func(domain.PushRecord) domain.MerchantNote) error {
	return nil
}

func (f *fakeStore) CountPushAttempt(context.Context, domain.ID, string) error { return nil }

func (f *fakeStore) FinishPush(ctx context.Context, _ domain.ID, _ string, n domain.MerchantNote) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notes = append(f.notes, n)
	f.noteCtx = ctx
	return true, nil
}

func (f *fakeStore) NoteAbandonedPushes(context.Context, time.Time, func(domain.PushRecord) domain.MerchantNote) (int, error) {
	return 0, nil
}

// fakeGateway answers every push with result and err, and remembers what it was sent.
type fakeGateway struct {
	result   gateway.Result
	err      error
	terminal string
	key      string
	payload  any
	calls    int
	ctxErr   error
	// hold, when set, is waited for before answering (the caller goes away meanwhile).
	hold chan struct{}
}

func (g *fakeGateway) PushKeyed(ctx context.Context, terminal, key string, payload any, before func(int) error) (gateway.Result, error) {
	if err := before(1); err != nil {
		return gateway.Result{}, err
	}
	g.calls++
	g.terminal, g.key, g.payload = terminal, key, payload
	if g.hold != nil {
		<-g.hold
	}
	g.ctxErr = ctx.Err()
	return g.result, g.err
}

var testNow = time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)

func newService(st *fakeStore, gw Gateway) *Service {
	cfg := Config{Store: st, Budget: time.Second, Now: func() time.Time { return testNow }}
	if gw != nil {
		cfg.Gateway = gw
	}
	return New(cfg)
}

func code(err error) string {
	if e, ok := domain.AsError(err); ok {
		return e.Code
	}
	return ""
}

// Where several preconditions fail, the first in the contract's order is the answer; none of them
// reaches the gateway, takes the lease or writes a note.
func TestPreconditionsInOrder(t *testing.T) {
	breaks := []struct {
		code  string
		apply func(*domain.PushSource)
	}{
		{"line_item_inactive", func(s *domain.PushSource) { s.View.Status = "canceled" }},
		{"not_gateway_workflow", func(s *domain.PushSource) { s.Workflow = "terminal" }},
		{"missing_equipment", func(s *domain.PushSource) { s.View.Equipment = nil }},
		{"missing_vendor_terminal_id", func(s *domain.PushSource) {
			if s.View.Equipment != nil {
				s.View.Equipment.VendorTerminalID = nil
			}
		}},
		{"missing_varsheet", func(s *domain.PushSource) { s.View.Varsheet = nil }},
		{"missing_file_build", func(s *domain.PushSource) { s.FileBuild = nil }},
		{"no_active_pricing_model", func(s *domain.PushSource) { s.Pricing = nil }},
	}
	for i, b := range breaks {
		// Break this precondition and every later one: this one must be the answer.
		src := source()
		for _, later := range breaks[i:] {
			later.apply(src)
		}
		st, gw := &fakeStore{src: src}, &fakeGateway{}
		_, err := newService(st, gw).Push(context.Background(), pusher, orderID, itemID, "")
		e, ok := domain.AsError(err)
		if !ok || e.Kind != domain.KindConflict || e.Code != b.code {
			t.Errorf("%s: got %v", b.code, err)
		}
		if gw.calls != 0 || st.leases != 0 || len(st.notes) != 0 {
			t.Errorf("%s: gateway calls %d, leases %d, notes %d; want none", b.code, gw.calls, st.leases, len(st.notes))
		}
	}
}

func TestUnknownLineItemIsNotFound(t *testing.T) {
	_, err := newService(&fakeStore{}, &fakeGateway{}).Push(context.Background(), pusher, orderID, itemID, "")
	if e, ok := domain.AsError(err); !ok || e.Kind != domain.KindNotFound {
		t.Fatalf("got %v, want not found", err)
	}
}

// A push while another of the same line item runs answers push_in_progress at once, with the
// time the other may still run: what is left of its gateway budget, which ends leaseMargin (30 s)
// before its lease does; past its budget, what is left of its lease (it is writing its note, or
// its process died). At least a second: released meanwhile, try again at once.
func TestPushInProgress(t *testing.T) {
	for expires, want := range map[time.Time]time.Duration{
		testNow.Add(41500 * time.Millisecond): 11500 * time.Millisecond,
		testNow.Add(30300 * time.Millisecond): time.Second, // its budget ends in 0.3 s
		testNow.Add(20 * time.Second):         20 * time.Second,
		testNow.Add(time.Millisecond):         time.Second,
		{}:                                    time.Second,
	} {
		st, gw := &fakeStore{src: source(), leased: true, expires: expires}, &fakeGateway{}
		_, err := newService(st, gw).Push(context.Background(), pusher, orderID, itemID, "")
		if code(err) != "push_in_progress" || gw.calls != 0 || len(st.notes) != 0 {
			t.Fatalf("got %v, %d gateway calls, %d notes", err, gw.calls, len(st.notes))
		}
		if e, _ := domain.AsError(err); e.RetryAfter != want {
			t.Errorf("lease expiring at %v: RetryAfter %v, want %v", expires, e.RetryAfter, want)
		}
	}
}

// Every push that passed its checks writes exactly one note with its outcome, and gives the lease
// back; the answer is the line item as it is, or the contract's 502.
func TestOutcomes(t *testing.T) {
	cases := []struct {
		name     string
		gw       *fakeGateway // nil: no gateway configured
		wantCode string       // "" for success
		inNote   string
	}{
		{"pushed", &fakeGateway{result: gateway.Result{PushID: "push-42", Attempts: 2}}, "", "succeeded after 2 attempt(s); gateway push id: push-42"},
		{"pushed without an id", &fakeGateway{result: gateway.Result{Attempts: 1}}, "", "gateway push id: none given"},
		{"rejected", &fakeGateway{err: &gateway.Error{Kind: gateway.KindRejected, Reason: "unknown terminal", Attempts: 1, StatusCode: 404}},
			"gateway_rejected", "failed: gateway rejected after 1 attempt(s): unknown terminal"},
		{"unavailable", &fakeGateway{err: &gateway.Error{Kind: gateway.KindUnavailable, Reason: "503 Service Unavailable", Attempts: 5}},
			"gateway_unavailable", "failed: gateway unavailable after 5 attempt(s)"},
		{"no gateway configured", nil, "gateway_unavailable", "no gateway is configured"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := &fakeStore{src: source()}
			var gw Gateway
			if c.gw != nil {
				gw = c.gw
			}
			view, err := newService(st, gw).Push(context.Background(), pusher, orderID, itemID, "")
			if c.wantCode == "" {
				if err != nil || view == nil || view.ID != itemID {
					t.Fatalf("got %v, %v", view, err)
				}
			} else if e, ok := domain.AsError(err); !ok || e.Kind != domain.KindBadGateway || e.Code != c.wantCode {
				t.Fatalf("got %v, want 502 %s", err, c.wantCode)
			}
			if len(st.notes) != 1 {
				t.Fatalf("%d notes, want 1", len(st.notes))
			}
			n := st.notes[0]
			if n.MerchantID != merchant || n.CreatedBy != pusher.UserID || !strings.Contains(n.Body, c.inNote) ||
				!strings.Contains(n.Body, `terminal "TID/0001"`) || !strings.Contains(n.Body, string(itemID)) {
				t.Errorf("note %+v; want it on the merchant, by the pusher, naming terminal, line item and %q", n, c.inNote)
			}
			if st.leased {
				t.Error("lease still held after the push")
			}
			if c.gw != nil && c.gw.terminal != "TID/0001" {
				t.Errorf("pushed to terminal %q", c.gw.terminal)
			}
		})
	}
}

// A caller that goes away mid-push does not cut the push short: it runs to its outcome under its
// own budget, and its note and lease are settled.
func TestPushOutlivesTheCaller(t *testing.T) {
	st := &fakeStore{src: source()}
	gw := &fakeGateway{result: gateway.Result{PushID: "p1", Attempts: 1}, hold: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := newService(st, gw).Push(ctx, pusher, orderID, itemID, "")
		done <- err
	}()
	cancel()
	close(gw.hold)
	if err := <-done; err != nil {
		t.Fatalf("push: %v", err)
	}
	if gw.ctxErr != nil {
		t.Errorf("the gateway call saw the caller's cancellation: %v", gw.ctxErr)
	}
	if len(st.notes) != 1 || st.noteCtx.Err() != nil || st.leased {
		t.Errorf("notes %d (ctx err %v), lease held %v", len(st.notes), st.noteCtx.Err(), st.leased)
	}
}

// The payload sent is the derivation of the line item's inputs.
func TestPayloadIsDerived(t *testing.T) {
	st, gw := &fakeStore{src: source()}, &fakeGateway{result: gateway.Result{Attempts: 1}}
	if _, err := newService(st, gw).Push(context.Background(), pusher, orderID, itemID, ""); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(gw.payload)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"terminalId":"TID/0001"`, `"pricingMode":"standard"`, `"menu":["credit_sale","refund","void","tip_adjust","batch_close"]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("payload %s lacks %s", b, want)
		}
	}
}

// The gateway's key for a push is derived from the caller's: the same for the same user and key,
// different across users and keys, and not the caller's key itself.
func TestGatewayKey(t *testing.T) {
	other := domain.ID("00000000-0000-4000-8000-000000000002")
	k := GatewayKey(pusher.UserID, "retry-1")
	if k != GatewayKey(pusher.UserID, "retry-1") || k == GatewayKey(other, "retry-1") || k == GatewayKey(pusher.UserID, "retry-2") || strings.Contains(k, "retry") {
		t.Fatalf("GatewayKey: %q", k)
	}
	st, gw := &fakeStore{src: source()}, &fakeGateway{result: gateway.Result{Attempts: 1}}
	if _, err := newService(st, gw).Push(context.Background(), pusher, orderID, itemID, "retry-1"); err != nil || gw.key != k {
		t.Fatalf("push sent key %q (%v), want %q", gw.key, err, k)
	}
}
