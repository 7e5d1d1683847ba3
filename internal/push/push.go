// Package push is operation 4.1: re-send a provisioned terminal's parameters and POS menu to its
// gateway. It reads the line item, checks every precondition before any network call, holds a
// database lease so that one line item is pushed by one process at a time, records the push and
// each of its attempts before the gateway can see them, and replaces that record with the
// outcome as a merchant note. It never changes the status of anything.
package push

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"backoffice/internal/deviceparams"
	"backoffice/internal/domain"
	"backoffice/internal/gateway"
	"backoffice/internal/reqlog"
)

// Store is what a push reads and writes. A push that passed its checks is recorded before the
// gateway can see it (BeginPush, then CountPushAttempt before each request), and its record is
// replaced by its note (FinishPush); a record left behind is noted by the next push of the line
// item (BeginPush) or once its lease has expired (NoteAbandonedPushes).
type Store interface {
	PushSource(ctx context.Context, scope domain.Scope, orderID, lineItemID domain.ID) (*domain.PushSource, error)
	AcquirePushLease(ctx context.Context, lineItemID domain.ID, holder string, now time.Time, ttl time.Duration) (bool, error)
	PushLeaseExpiry(ctx context.Context, lineItemID domain.ID) (time.Time, bool, error)
	ReleasePushLease(ctx context.Context, lineItemID domain.ID, holder string) error
	BeginPush(ctx context.Context, r domain.PushRecord, noteOf func(domain.PushRecord) domain.MerchantNote) error
	CountPushAttempt(ctx context.Context, lineItemID domain.ID, holder string) error
	FinishPush(ctx context.Context, lineItemID domain.ID, holder string, note domain.MerchantNote) (noted bool, err error)
	NoteAbandonedPushes(ctx context.Context, now time.Time, noteOf func(domain.PushRecord) domain.MerchantNote) (int, error)
}

// Gateway sends a payload to the gateway hosting a terminal under an Idempotency-Key ("" for a
// fresh one), calling before ahead of each attempt and sending none that it fails;
// *gateway.Client is one.
type Gateway interface {
	PushKeyed(ctx context.Context, terminalID, key string, payload any, before func(attempt int) error) (gateway.Result, error)
}

// Observer measures pushes; internal/metrics implements it. Outcome is one of the Outcome*
// constants.
type Observer interface {
	ObservePush(outcome string, elapsed time.Duration)
}

// Outcomes of a push that reached the gateway stage.
const (
	OutcomeSucceeded     = "succeeded"
	OutcomeRejected      = "rejected"
	OutcomeUnavailable   = "unavailable"
	OutcomeNotConfigured = "not_configured"
	OutcomeError         = "error" // neither the gateway's answer nor its absence: e.g. the caller went away
)

// Service runs pushes.
type Service struct {
	store   Store
	gw      Gateway // nil when no gateway is configured
	now     func() time.Time
	lease   time.Duration
	log     *slog.Logger
	observe Observer
	// running counts pushes holding a lease, so that a stopping server can wait for their notes.
	mu      sync.Mutex
	idle    *sync.Cond
	running int
	// unwritten holds, by holder, the notes of this process's pushes that the database refused,
	// until their records are noted: this process knows their outcomes, which no record holds.
	unwritten map[string]domain.MerchantNote
}

// Config configures a Service.
type Config struct {
	Store   Store
	Gateway Gateway // nil: every push that passes its checks answers gateway_unavailable
	// Budget is the gateway's total time budget; the lease outlives it, so that a running push
	// is never taken over, yet a crashed process frees the line item soon after.
	Budget time.Duration
	Now    func() time.Time
	Logger *slog.Logger
	// Observer, when set, is told the outcome and duration of every push that reaches the
	// gateway stage.
	Observer Observer
}

// leaseMargin is how long a lease outlives the gateway budget: time to write the note.
const leaseMargin = 30 * time.Second

// Lease is how long a push may hold its line item: the gateway budget and the time to note it.
func (s *Service) Lease() time.Duration { return s.lease }

// New returns a Service.
func New(cfg Config) *Service {
	s := &Service{store: cfg.Store, gw: cfg.Gateway, now: cfg.Now, lease: cfg.Budget + leaseMargin, log: cfg.Logger, observe: cfg.Observer,
		unwritten: make(map[string]domain.MerchantNote)}
	s.idle = sync.NewCond(&s.mu)
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	// An outcome's line carries the id of the request that pushed (and its trace id).
	s.log = reqlog.Wrap(s.log)
	return s
}

// Push re-sends the line item's device parameters and returns the line item as it is: a push
// changes nothing but the merchant's notes. callerKey is the caller's Idempotency-Key, or "": the
// gateway sees a key derived from it (GatewayKey), or a fresh one.
func (s *Service) Push(ctx context.Context, actor domain.Actor, orderID, lineItemID domain.ID, callerKey string) (*domain.LineItemView, error) {
	src, err := s.store.PushSource(ctx, actor.Scope(), orderID, lineItemID)
	if errors.Is(err, domain.ErrNotFound) {
		return nil, domain.NotFound("line item " + lineItemID.String() + " of deployment order " + orderID.String())
	}
	if err != nil {
		return nil, err
	}
	in, err := Preconditions(src)
	if err != nil {
		return nil, err
	}
	holder := domain.NewID().String()
	ok, err := s.store.AcquirePushLease(ctx, lineItemID, holder, s.now(), s.lease)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, s.inProgress(ctx, lineItemID)
	}
	s.started()
	defer s.finished()
	// The lease and the note must be settled even if the caller goes away mid-push.
	settle := context.WithoutCancel(ctx)
	defer func() {
		if err := s.store.ReleasePushLease(settle, lineItemID, holder); err != nil {
			s.log.ErrorContext(settle, "push lease not released; it will expire", slog.String("line_item", lineItemID.String()), slog.String("error", err.Error()))
		}
	}()
	if err := s.record(settle, actor, src, in, holder); err != nil {
		return nil, err
	}
	result, took, pushErr := s.sendCounted(settle, actor, in, lineItemID, holder, callerKey)
	if errors.Is(pushErr, errNotCounted) {
		// The record keeps the attempts it counted; it is noted by the next push of the line
		// item, or once the lease has expired.
		s.log.Warn("push stopped: the database did not record its next gateway attempt", slog.String("line_item", lineItemID.String()),
			slog.String("error", pushErr.Error()))
		return nil, fmt.Errorf("push of line item %s: %w", lineItemID, pushErr)
	}
	note := domain.MerchantNote{MerchantID: src.MerchantID, CreatedAt: s.now(), CreatedBy: actor.UserID,
		Body: noteBody(actor.UserID, in.TerminalID, lineItemID, result, pushErr)}
	written, err := s.store.FinishPush(settle, lineItemID, holder, note)
	if err != nil {
		// The record stays, with every attempt counted: the next push of the line item notes it,
		// or NoteAbandoned once the lease has expired; in this process, with this note.
		s.keepUnwritten(holder, note)
		return nil, fmt.Errorf("push of line item %s: merchant note: %w", lineItemID, err)
	}
	if !written {
		s.log.Warn("push outlived its lease: its record was noted by another push", slog.String("line_item", lineItemID.String()),
			slog.String("outcome", outcome(pushErr)))
	}
	if pushErr != nil {
		s.logFailure(settle, lineItemID, in.TerminalID, pushErr, took)
		return nil, answer(pushErr)
	}
	return &src.View, nil
}

// record writes the push's record, which no request reaches the gateway before: a push the
// database cannot record is answered 503 and sends nothing. A record an earlier push of the line
// item left behind is noted meanwhile.
func (s *Service) record(ctx context.Context, actor domain.Actor, src *domain.PushSource, in deviceparams.Input, holder string) error {
	item := src.View.ID
	rec := domain.PushRecord{LineItemID: item, Holder: holder, MerchantID: src.MerchantID, UserID: actor.UserID,
		TerminalID: in.TerminalID, StartedAt: s.now()}
	noteOf, noted := s.noting()
	if err := s.store.BeginPush(ctx, rec, noteOf); err != nil {
		return fmt.Errorf("push of line item %s: record: %w", item, err)
	}
	noted()
	return nil
}

// sendCounted sends the push to the gateway, each attempt counted on its record before it is
// sent, and tells the observer its outcome. A push that passed its checks runs to its outcome
// even if the caller goes away (ctx is not the caller's): the gateway budget bounds it, and the
// note must say what happened.
func (s *Service) sendCounted(ctx context.Context, actor domain.Actor, in deviceparams.Input, item domain.ID, holder, callerKey string) (result gateway.Result, took time.Duration, err error) {
	start := time.Now()
	var gatewayKey string
	if callerKey != "" {
		gatewayKey = GatewayKey(actor.UserID, callerKey)
	}
	count := func(int) error {
		if err := s.store.CountPushAttempt(ctx, item, holder); err != nil {
			return fmt.Errorf("%w: %w", errNotCounted, err)
		}
		return nil
	}
	result, err = s.send(ctx, in, gatewayKey, count)
	took = time.Since(start)
	if s.observe != nil {
		s.observe.ObservePush(outcome(err), took)
	}
	return result, took, err
}

// errNotCounted stops a push whose next gateway attempt the database could not count.
var errNotCounted = errors.New("the gateway attempt could not be recorded")

// maxUnwritten bounds the notes kept for records not yet noted: a database that refuses writes
// for long keeps this many outcomes, and the pushes after them are noted with their attempts only.
const maxUnwritten = 1024

func (s *Service) keepUnwritten(holder string, note domain.MerchantNote) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.unwritten) < maxUnwritten {
		s.unwritten[holder] = note
	}
}

// noting returns the noteOf a store call notes push records left behind with, and noted, to be
// called once that call has succeeded: the notes this process kept for those records are then
// written, and forgotten.
func (s *Service) noting() (noteOf func(domain.PushRecord) domain.MerchantNote, noted func()) {
	// The notes and the clock, not the service: noteOf runs inside the store's transaction, whose
	// body must hold no way back to the store (docs/architecture.md, "Transactions").
	mu, unwritten, now := &s.mu, s.unwritten, s.now
	var holders []string
	noteOf = func(r domain.PushRecord) domain.MerchantNote {
		holders = append(holders, r.Holder)
		mu.Lock()
		n, ok := unwritten[r.Holder]
		mu.Unlock()
		if ok {
			return n
		}
		return unfinishedNote(r, now())
	}
	noted = func() {
		mu.Lock()
		defer mu.Unlock()
		for _, h := range holders {
			delete(unwritten, h)
		}
	}
	return noteOf, noted
}

// unfinishedNote is the note, made at at, of a push record left behind whose outcome this process
// does not know: its push stopped (its process ended) or the database refused its note in another
// process. The attempts are known, each counted before it was sent.
func unfinishedNote(r domain.PushRecord, at time.Time) domain.MerchantNote {
	return domain.MerchantNote{MerchantID: r.MerchantID, CreatedAt: at, CreatedBy: r.UserID,
		Body: fmt.Sprintf("Device parameter push by user %s to terminal %q for line item %s, started %s, did not record its outcome "+
			"(the service stopped, or the database refused the note): %d attempt(s) sent to the gateway",
			r.UserID, r.TerminalID, r.LineItemID, r.StartedAt.UTC().Format(time.RFC3339), r.Attempts)}
}

// NoteAbandoned notes the pushes whose records were left behind and whose leases have expired:
// their process stopped, or the database refused their notes and nobody pushed the line item
// again. serve runs it every SettleEvery.
func (s *Service) NoteAbandoned(ctx context.Context) (int, error) {
	noteOf, noted := s.noting()
	n, err := s.store.NoteAbandonedPushes(ctx, s.now(), noteOf)
	if err != nil {
		return 0, err
	}
	noted()
	return n, nil
}

// SettleEvery is how often serve notes abandoned pushes (NoteAbandoned): a lease that expired is
// noted within this much of its expiry.
const SettleEvery = 10 * time.Second

// RunSettler calls NoteAbandoned every SettleEvery until ctx ends, logging what it noted and a
// failure once per run of failures (a database refusing writes fails every call).
func (s *Service) RunSettler(ctx context.Context) {
	t := time.NewTicker(SettleEvery)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := s.NoteAbandoned(ctx)
		switch {
		case err != nil && !failing:
			s.log.Warn("abandoned pushes not noted; trying again", slog.String("error", err.Error()))
		case n > 0:
			s.log.Info("abandoned pushes noted", slog.Int("count", n))
		}
		failing = err != nil
	}
}

// logFailure tells the operator about a push that ends in 502: which line item and terminal, and
// why. The access line alone shows only a 502.
func (s *Service) logFailure(ctx context.Context, lineItem domain.ID, terminal string, err error, took time.Duration) {
	attrs := []slog.Attr{
		slog.String("line_item", lineItem.String()),
		slog.String("terminal_id", terminal),
		slog.String("outcome", outcome(err)),
		slog.Float64("duration_ms", float64(took.Microseconds())/1000),
	}
	var ge *gateway.Error
	if errors.As(err, &ge) {
		attrs = append(attrs, slog.String("reason", ge.Reason), slog.Int("attempts", ge.Attempts))
		if ge.StatusCode != 0 {
			attrs = append(attrs, slog.Int("gateway_status", ge.StatusCode))
		}
		if ge.Cause != nil {
			attrs = append(attrs, slog.String("cause", ge.Cause.Error()))
		}
	} else {
		attrs = append(attrs, slog.String("reason", err.Error()))
	}
	s.log.LogAttrs(ctx, slog.LevelWarn, "push failed", attrs...)
}

func (s *Service) started() {
	s.mu.Lock()
	s.running++
	s.mu.Unlock()
}

func (s *Service) finished() {
	s.mu.Lock()
	s.running--
	if s.running == 0 {
		s.idle.Broadcast()
	}
	s.mu.Unlock()
}

// Wait returns when no push holds a lease: each has written its note and released its lease. A
// stopping server calls it before closing the store, whatever became of the HTTP drain.
func (s *Service) Wait() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.running > 0 {
		s.idle.Wait()
	}
}

// inProgress answers a push refused by another's lease, with how long that push may still run.
func (s *Service) inProgress(ctx context.Context, lineItemID domain.ID) error {
	e := domain.Conflict("push_in_progress", "another push of this line item is running; try again when it has finished")
	e.RetryAfter = time.Second // released meanwhile: try again at once
	expires, ok, err := s.store.PushLeaseExpiry(ctx, lineItemID)
	if err != nil {
		return err
	}
	if ok {
		e.RetryAfter = s.Remaining(expires)
	}
	return e
}

// Remaining is how long a push whose lease (or Idempotency-Key claim, taken for as long) expires
// at until may still run, at least a second: the wait a refused caller is told. Its gateway
// budget ends leaseMargin before the lease, whichever replica's budget it runs under, and the
// push ends then at the latest, but for writing its note. A lease held past its push's budget is
// a note being written or a process that died: then only the lease's expiry is certain.
func (s *Service) Remaining(until time.Time) time.Duration {
	left := until.Sub(s.now())
	if budget := left - leaseMargin; budget > 0 {
		left = budget
	}
	return max(left, time.Second)
}

// errNoGateway is the outcome of a push when no gateway is configured.
var errNoGateway = &gateway.Error{Kind: gateway.KindUnavailable, Reason: "no gateway is configured (BACKOFFICE_GATEWAY_URL is not set)"}

func (s *Service) send(ctx context.Context, in deviceparams.Input, key string, before func(int) error) (gateway.Result, error) {
	if s.gw == nil {
		return gateway.Result{}, errNoGateway
	}
	return s.gw.PushKeyed(ctx, in.TerminalID, key, deviceparams.Derive(in), before)
}

// GatewayKey derives the Idempotency-Key the gateway sees from a caller's key: the same user's
// retries of one push carry the same key to the gateway, and no two users' keys meet there.
func GatewayKey(user domain.ID, callerKey string) string {
	sum := sha256.Sum256([]byte("backoffice push\x00" + string(user) + "\x00" + callerKey))
	return hex.EncodeToString(sum[:16])
}

// outcome names a push's result for metrics.
func outcome(err error) string {
	if err == nil {
		return OutcomeSucceeded
	}
	if err == errNoGateway {
		return OutcomeNotConfigured
	}
	var ge *gateway.Error
	if !errors.As(err, &ge) {
		return OutcomeError
	}
	if ge.Kind == gateway.KindRejected {
		return OutcomeRejected
	}
	return OutcomeUnavailable
}

// answer maps a failed push to the contract's 502s.
func answer(err error) error {
	var ge *gateway.Error
	if !errors.As(err, &ge) {
		return &domain.Error{Kind: domain.KindBadGateway, Code: "gateway_unavailable", Detail: "the push did not complete", Err: err}
	}
	if ge.Kind == gateway.KindRejected {
		return &domain.Error{Kind: domain.KindBadGateway, Code: "gateway_rejected", Detail: "the gateway rejected the push: " + ge.Reason}
	}
	return &domain.Error{Kind: domain.KindBadGateway, Code: "gateway_unavailable", Detail: "the gateway is unavailable: " + ge.Reason}
}

func noteBody(user domain.ID, terminal string, lineItem domain.ID, r gateway.Result, err error) string {
	who := fmt.Sprintf("Device parameter push by user %s to terminal %q for line item %s", user, terminal, lineItem)
	if err != nil {
		var ge *gateway.Error
		if errors.As(err, &ge) {
			return fmt.Sprintf("%s failed: gateway %s after %d attempt(s): %s", who, ge.Kind, ge.Attempts, ge.Reason)
		}
		return fmt.Sprintf("%s failed: %v", who, err)
	}
	id := r.PushID
	if id == "" {
		id = "none given"
	}
	return fmt.Sprintf("%s succeeded after %d attempt(s); gateway push id: %s", who, r.Attempts, id)
}

// Preconditions checks a line item in the contract's order and derives the push input. Where
// several fail, the first in the order is the answer.
func Preconditions(src *domain.PushSource) (deviceparams.Input, error) {
	v := src.View
	switch {
	case domain.LineItemInactive(v.Status):
		return deviceparams.Input{}, domain.Conflict("line_item_inactive", "the line item is "+v.Status)
	case src.Workflow != domain.WorkflowGateway:
		return deviceparams.Input{}, domain.Conflict("not_gateway_workflow", "the line item's deployment model uses the "+src.Workflow+" workflow, not the gateway workflow")
	case v.Equipment == nil:
		return deviceparams.Input{}, domain.Conflict("missing_equipment", "the line item has no equipment")
	case v.Equipment.VendorTerminalID == nil || *v.Equipment.VendorTerminalID == "":
		return deviceparams.Input{}, domain.Conflict("missing_vendor_terminal_id", "the line item's equipment has no vendor terminal id")
	case v.Varsheet == nil:
		return deviceparams.Input{}, domain.Conflict("missing_varsheet", "the line item has no VAR sheet")
	case src.FileBuild == nil:
		return deviceparams.Input{}, domain.Conflict("missing_file_build", "the line item has no file build")
	case src.Pricing == nil:
		return deviceparams.Input{}, domain.Conflict("no_active_pricing_model", "the merchant has no active pricing model")
	}
	settings, err := deviceparams.ParseSettings(src.FileBuild)
	if err != nil {
		return deviceparams.Input{}, fmt.Errorf("stored file build of line item %s: %w", v.ID, err)
	}
	var serial *string
	if v.InventoryUnit != nil {
		serial = &v.InventoryUnit.SerialNumber
	}
	vs := v.Varsheet
	return deviceparams.Input{
		TerminalID:   *v.Equipment.VendorTerminalID,
		SerialNumber: serial,
		Varsheet: deviceparams.Varsheet{MerchantNumber: vs.MerchantNumber, TerminalIDNumber: vs.TerminalIDNumber, VNumber: vs.VNumber,
			Chain: vs.Chain, Agent: vs.Agent, StoreNumber: vs.StoreNumber, MerchantLocationNumber: vs.MerchantLocationNumber,
			CurrencyCode: vs.CurrencyCode, TimeZoneCode: vs.TimeZoneCode, PinDebit: vs.PinDebit, EBTFoodStamps: vs.EBTFoodStamps, EBTCash: vs.EBTCash},
		Settings: settings,
		Pricing:  deviceparams.PricingModel{Type: src.Pricing.Type, AdjustmentPercent: src.Pricing.AdjustmentPercent},
	}, nil
}
