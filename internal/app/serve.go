package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"

	"backoffice/internal/api"
	"backoffice/internal/auditlog"
	"backoffice/internal/auth"
	"backoffice/internal/buildinfo"
	"backoffice/internal/gateway"
	"backoffice/internal/metrics"
	"backoffice/internal/push"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
	"backoffice/internal/tracing"
)

// A stopping server waits for in-flight requests at least minShutdownGrace, and longer when the
// gateway budget needs it: a push may run for the whole budget, then writes its merchant note and
// releases its lease, and drainMargin is time for that. Writing a response is bounded the same way.
const (
	minShutdownGrace = 30 * time.Second
	minWriteTimeout  = 60 * time.Second
	drainMargin      = 10 * time.Second
)

// shutdownGrace is how long a stopping server drains in-flight requests, given the gateway budget.
func shutdownGrace(gatewayBudget time.Duration) time.Duration {
	return max(minShutdownGrace, gatewayBudget+drainMargin)
}

// writeTimeout bounds a response, from the end of its request: a push answers after the budget.
func writeTimeout(gatewayBudget time.Duration) time.Duration {
	return max(minWriteTimeout, gatewayBudget+drainMargin)
}

// listenError names the settings that choose a listen address (settings: "--addr or
// BACKOFFICE_ADDR"), and for an address in use says what to do about it.
func listenError(addr, settings, running string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("listen %s: the address is in use (%s may be running): stop it, or choose another address with %s: %w", addr, running, settings, err)
	}
	return fmt.Errorf("listen %s (%s): %w", addr, settings, err)
}

func runServe(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("serve")
	cfg.serveFlags(fs)
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if _, _, err := cfg.OAuth.verifierConfig(); err != nil {
		return err
	}
	log, flushLog := newServeLogger(env.Stderr, cfg.LogLevel)
	defer flushLog()
	applyMemoryLimit(cfg, log)
	tp, stopTracing, err := tracing.Setup(ctx, env.Getenv)
	if err != nil {
		return err
	}
	defer flushTraces(ctx, stopTracing, log)
	var d *demoSetup
	if cfg.Demo {
		var err error
		if d, err = prepareDemo(ctx, &cfg, log); err != nil {
			return err
		}
		defer d.close()
	}
	ring, err := masterRing(cfg)
	if err != nil {
		return err
	}
	st, genesis, err := openContinuing(ctx, cfg, ring, "serve")
	if err != nil {
		return err
	}
	defer st.Close()
	if err := checkTrailCatalog(ctx, st, log); err != nil {
		return err
	}
	if d != nil {
		if err := d.load(ctx, st, ring, cfg.demoOwnDatabase()); err != nil {
			return err
		}
	}
	if err := checkKeyCoverage(ctx, st, ring, log); err != nil {
		return err
	}
	if err := checkCredentialStrength(ctx, cfg, st, log); err != nil {
		return err
	}
	tokensCtx, stopTokens := context.WithCancel(ctx)
	defer stopTokens()
	tokens, err := startTokens(tokensCtx, cfg.OAuth, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return listenError(cfg.Addr, "--addr or BACKOFFICE_ADDR", "another serve, or a demo,", err)
	}
	listeners := []listener{{ln: ln}}
	var m *metrics.Metrics
	if cfg.MetricsAddr != MetricsOff {
		m = metrics.New(st.PoolCollector())
	}
	if m != nil && cfg.MetricsAddr != "" {
		mln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("listen %s (BACKOFFICE_METRICS_ADDR): %w", cfg.MetricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", m.Handler())
		listeners = append(listeners, listener{ln: mln, handler: mux})
	}
	var witnessed witnessObserver
	if m != nil {
		witnessed = m
		st.Trail().ObserveGroups(m)
	}
	cp, err := startCheckpoints(ctx, cfg, st.Trail(), ring, genesis, log, witnessed)
	if err != nil {
		closeAll(listeners)
		return err
	}
	handler, pushes := newServing(cfg, st, ring, log, m, tp, tokens, cp.c)
	listeners[0].handler = handler
	defer runSettler(ctx, pushes)() // stopped before the store closes
	attrs := []any{slog.String("addr", ln.Addr().String()), slog.String("store", st.Engine()),
		slog.String("gateway_url", redactedURL(cfg.GatewayURL)), slog.String("key_id", ring.ActiveKeyID())}
	switch {
	case m == nil:
		attrs = append(attrs, slog.String("metrics", "off"))
	case len(listeners) > 1:
		attrs = append(attrs, slog.String("metrics", "http://"+listeners[1].ln.Addr().String()+"/metrics"))
	default:
		attrs = append(attrs, slog.String("metrics", "/metrics on the main listener"))
	}
	attrs = append(attrs, slog.Bool("tracing", tp != nil))
	b := buildinfo.Read()
	attrs = append(attrs, slog.String("version", b.Version), slog.String("revision", b.Revision),
		slog.Bool("modified", b.Modified), slog.String("go", b.GoVersion))
	log.Info("serving", attrs...)
	// Whoever waits for serve to answer reads its start-up lines complete: only the lines of
	// the requests wait to be written together.
	flushLog()
	if d != nil {
		d.printCurls(env.Stdout, "http://"+ln.Addr().String())
	}
	err = serveUntilDone(ctx, listeners, log, drain{grace: shutdownGrace(cfg.GatewayTimeout), write: writeTimeout(cfg.GatewayTimeout), wait: pushes.Wait})
	cp.stop(ctx) // the last checkpoint, of every event the drained requests wrote
	return err
}

// checkTrailCatalog checks, before anything records an audit event, that the audit trail's tables
// are what the migrations made (store.CheckTrailCatalog). Where they are not, serve still serves,
// but the trail is held: every request that records an audit event (a decrypt among them) answers
// 503, /readyz answers not_ready, and no checkpoint is signed, until serve is restarted on tables
// put back as the migrations made them; the error line names what was found. A catalog that
// cannot be read stops serve.
func checkTrailCatalog(ctx context.Context, st *store.Store, log *slog.Logger) error {
	err := st.CheckTrailCatalog(ctx)
	var held *auditlog.TrailCatalogError
	if errors.As(err, &held) {
		log.ErrorContext(ctx, "the audit trail's tables are not what the migrations made: no audit event is recorded, so every request that records one (decrypts among them) answers 503, and no checkpoint is signed, until serve is restarted on the tables as the migrations made them (see docs/compliance.md)",
			slog.Any("found", held.Findings))
		return nil
	}
	return err
}

// closeAll closes listeners not yet served.
func closeAll(listeners []listener) {
	for _, l := range listeners {
		l.ln.Close()
	}
}

// runSettler notes abandoned pushes in the background (push.Service.RunSettler) until the
// returned func is called, which waits for it to stop.
func runSettler(ctx context.Context, pushes *push.Service) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pushes.RunSettler(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// applyMemoryLimit bounds the heap by a soft limit rather than by a forced GOGC: the collector
// runs as usual while the heap is small and harder near the limit, so memory taken in a burst is
// given back. GOMEMLIMIT, read by the runtime at start, wins.
func applyMemoryLimit(cfg Config, log *slog.Logger) {
	if cfg.MemoryLimitFromGo {
		log.Info("memory limit from GOMEMLIMIT", slog.Int64("bytes", debug.SetMemoryLimit(-1)))
		return
	}
	debug.SetMemoryLimit(cfg.MemoryLimit)
}

// newHandler wires the API. m, when not nil, measures it and is served at /metrics on the same
// listener unless it has one of its own. tp, when not nil, traces it: a span per request, per
// store call and per gateway attempt.
func newHandler(cfg Config, st *store.Store, ring *secrets.Ring, log *slog.Logger, m *metrics.Metrics, tp trace.TracerProvider) http.Handler {
	h, _ := newServing(cfg, st, ring, log, m, tp, nil, nil)
	return h
}

// newServing is newHandler, with the push service it wired: serve waits for its pushes to settle
// before closing the store. tokens, when not nil, accepts the identity provider's access tokens;
// checkpoints, when not nil, holds the latest checkpoint GET /v1/audit-log/checkpoint serves.
func newServing(cfg Config, st *store.Store, ring *secrets.Ring, log *slog.Logger, m *metrics.Metrics, tp trace.TracerProvider, tokens auth.Tokens, checkpoints *checkpointer) (http.Handler, *push.Service) {
	var gw push.Gateway
	if cfg.GatewayURL != "" {
		gw = gateway.New(gateway.Config{BaseURL: cfg.GatewayURL, Token: string(cfg.GatewayToken),
			Timeout: cfg.GatewayTimeout, AttemptTimeout: cfg.GatewayAttemptTimeout,
			Logger: log.With(slog.String("component", "gateway")), TracerProvider: tp})
	}
	// Without tracing the handlers call the store itself: no decorator, no cost.
	var calls tracedBackend = st
	if tp != nil {
		calls = newTracedStore(st, tp)
	}
	pc := push.Config{Store: calls, Gateway: gw, Budget: cfg.GatewayTimeout, Logger: log}
	deps := api.Deps{Store: calls, Health: st, Ring: ring, Tracer: tp, Logger: log, Limits: api.Limits{
		Rate: cfg.RateLimit, Burst: cfg.RateBurst,
		FailureRate: cfg.AuthFailureLimit / 60, FailureBurst: cfg.AuthFailureBurst,
		ClientAddrHeader: cfg.TrustedProxyHeader,
	}, CORSOrigins: cfg.CORSOrigins, Tokens: tokens,
		// Tiles and proofs read the tree's hashes and leaves: the store itself, untraced.
		AuditLog: st}
	if checkpoints != nil {
		deps.Checkpoints = checkpoints
		if checkpoints.witnesses != nil {
			deps.Witnesses = checkpoints
		}
	}
	if m != nil {
		pc.Observer, deps.Metrics = m, m
		if cfg.MetricsAddr == "" {
			deps.Extra = func(mux *http.ServeMux) { mux.Handle("GET /metrics", m.Handler()) }
		}
	}
	pushes := push.New(pc)
	deps.Pusher = pushes
	return api.New(deps), pushes
}

// flushTraces sends the spans still buffered when serve stops, within a few seconds: an
// unreachable collector must not hold up the shutdown.
func flushTraces(ctx context.Context, stop func(context.Context) error, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := stop(ctx); err != nil {
		log.Warn("tracing: spans not flushed", slog.String("error", err.Error()))
	}
}

// listener is one address the process serves, and what it serves there.
type listener struct {
	ln      net.Listener
	handler http.Handler
}

// Server limits. Reading a request (headers and body) is bounded tightly: no operation takes a
// body. Writing is bounded loosely (writeTimeout): a push may take the whole gateway budget.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 15 * time.Second
	idleTimeout       = 2 * time.Minute
	// serverMaxHeaderBytes is the hard cap net/http enforces before any handler (431 in plain
	// text); the API's own, smaller cap answers with the error body below it.
	serverMaxHeaderBytes = 64 << 10
)

func newServer(h http.Handler, log *slog.Logger, write time.Duration) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      write,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    serverMaxHeaderBytes,
		// "OPTIONS *" goes to the handler (a JSON 404), not to net/http's own empty 200.
		DisableGeneralOptionsHandler: true,
		ErrorLog:                     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// drain is how a server stops: how long it waits for in-flight requests, how long a response may
// take, and what it waits for even past the grace (pushes in flight, so that every note is
// written and every lease released before the store closes).
type drain struct {
	grace, write time.Duration
	wait         func()
}

// serveUntilDone serves every listener until ctx ends or one fails, then stops taking
// connections and drains in-flight requests within the grace.
func serveUntilDone(ctx context.Context, listeners []listener, log *slog.Logger, d drain) error {
	errc := make(chan error, len(listeners))
	servers := make([]*http.Server, len(listeners))
	for i, l := range listeners {
		servers[i] = newServer(l.handler, log, d.write)
		go func() { errc <- servers[i].Serve(l.ln) }()
	}
	var failed error
	select {
	case failed = <-errc:
	case <-ctx.Done():
	}
	log.Info("shutting down: draining in-flight requests")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.grace)
	defer cancel()
	var errs []error
	if failed != nil && !errors.Is(failed, http.ErrServerClosed) {
		errs = append(errs, failed)
	}
	for _, srv := range servers {
		if err := srv.Shutdown(sctx); err != nil {
			errs = append(errs, fmt.Errorf("shutdown: %w", err))
		}
	}
	if d.wait != nil {
		d.wait()
	}
	remaining := len(servers)
	if failed != nil {
		remaining--
	}
	for range remaining {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	log.Info("stopped")
	return nil
}
