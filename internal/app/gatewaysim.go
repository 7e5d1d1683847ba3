package app

import (
	"context"
	"log/slog"
	"net"
	"time"

	"backoffice/internal/gateway"
)

func runGatewaySim(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("gateway-sim")
	addr := fs.String("addr", "127.0.0.1:8090", "listen address")
	token := fs.String("token", string(cfg.GatewayToken), "bearer token to require (default BACKOFFICE_GATEWAY_TOKEN; empty: none)")
	failureRate := fs.Float64("failure-rate", 0, "fraction of pushes, 0 to 1, answered 503")
	latency := fs.Duration("latency", 0, "delay added to every request")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if !(*failureRate >= 0 && *failureRate <= 1) { // so written, NaN (which fails every comparison) is refused too
		return usagef("--failure-rate must be a number from 0 to 1, not %v", *failureRate)
	}
	log := newLogger(env.Stderr, cfg.LogLevel)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return listenError(*addr, "--addr", "another gateway simulator", err)
	}
	sim := gateway.NewSimulator(gateway.SimOptions{Token: *token, FailureRate: *failureRate, Latency: *latency})
	log.Info("gateway simulator serving", slog.String("addr", ln.Addr().String()),
		slog.Float64("failure_rate", *failureRate), slog.Float64("latency_ms", float64(latency.Microseconds())/1000))
	return serveUntilDone(ctx, []listener{{ln: ln, handler: sim}}, log, drain{grace: minShutdownGrace, write: minWriteTimeout})
}

// startSimulator runs a simulator in-process on a free loopback port, for the demo.
func startSimulator(ctx context.Context, log *slog.Logger) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = serveUntilDone(sctx, []listener{{ln: ln, handler: gateway.NewSimulator(gateway.SimOptions{})}}, log.With(slog.String("component", "gateway-sim")), drain{grace: minShutdownGrace, write: minWriteTimeout})
	}()
	stop = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
	}
	return "http://" + ln.Addr().String(), stop, nil
}
