package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"backoffice/internal/api"
	"backoffice/internal/gateway"
	"backoffice/internal/push"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
)

// shutdownGrace bounds how long a stopping server waits for in-flight requests: a push may run
// for the whole gateway budget.
const shutdownGrace = 30 * time.Second

func runServe(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("serve", env)
	cfg.serveFlags(fs)
	demo := fs.Bool("demo", false, "run with no configuration: SQLite in ./backoffice-demo, a development master key, demo data, a gateway simulator")
	if pos, err := parseArgs(fs, args); err != nil {
		return err
	} else if len(pos) != 0 {
		return fmt.Errorf("%w: serve takes no arguments", ErrUsage)
	}
	log := newLogger(env.Stderr, cfg.LogLevel)
	var d *demoSetup
	if *demo {
		var err error
		if d, err = prepareDemo(ctx, env, &cfg, log); err != nil {
			return err
		}
		defer d.close()
	}
	ring, err := masterRing(cfg)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	if d != nil {
		if err := d.load(ctx, st, ring); err != nil {
			return err
		}
	}
	if err := checkKeyCoverage(ctx, st, ring, log); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Addr, err)
	}
	handler := newHandler(cfg, st, ring, log)
	log.Info("serving", slog.String("addr", ln.Addr().String()), slog.String("store", st.Engine()),
		slog.Any("gateway_url", cfg.GatewayURL), slog.String("key_id", ring.ActiveKeyID()))
	if d != nil {
		d.printCurls(env.Stdout, "http://"+ln.Addr().String())
	}
	return serveUntilDone(ctx, ln, handler, log)
}

// newHandler wires the API.
func newHandler(cfg Config, st *store.Store, ring *secrets.Ring, log *slog.Logger) http.Handler {
	var gw push.Gateway
	if cfg.GatewayURL != "" {
		gw = gateway.New(gateway.Config{BaseURL: cfg.GatewayURL, Token: string(cfg.GatewayToken), Timeout: cfg.GatewayTimeout})
	}
	pusher := push.New(push.Config{Store: st, Gateway: gw, Budget: cfg.GatewayTimeout, Logger: log})
	return api.New(api.Deps{Store: st, Ring: ring, Pusher: pusher, Logger: log})
}

// serveUntilDone serves until ctx ends, then stops taking connections and drains in-flight
// requests within shutdownGrace.
func serveUntilDone(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		// A push may take the whole gateway budget; leave room for it.
		WriteTimeout:   60 * time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: draining in-flight requests")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}
