package app

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/store"
)

// Stopping serve lets an in-flight request finish before it exits.
func TestServeDrainsInFlightRequests(t *testing.T) {
	e := newTestEnv(t)
	if _, _, err := e.run("import", e.writeDataset("demo.json", importableDemo(time.Now().UTC()))); err != nil {
		t.Fatal(err)
	}
	// A gateway that says when a push arrives, then takes its time to answer.
	arrived := make(chan struct{}, 1)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		time.Sleep(500 * time.Millisecond)
		w.Write([]byte(`{"pushId":"p1"}`))
	}))
	defer slow.Close()
	e.vars["BACKOFFICE_GATEWAY_URL"] = slow.URL
	addr := freeAddr(t)
	_, _, stop := background(func(k string) string { return e.vars[k] }, "serve", "--addr", addr)
	url := "http://" + addr + "/v1/crm/deployment-orders/" + demoOrder.String() + "/line-items/" + demoLineItem.String() + "/device-parameters"
	status := make(chan int, 1)
	started := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			req, _ := http.NewRequest(http.MethodPost, url, nil)
			req.Header.Set("Authorization", "Api-Key "+importedStaffKey)
			if i == 0 {
				close(started)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				if i < 200 {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				status <- 0
				return
			}
			resp.Body.Close()
			status <- resp.StatusCode
			return
		}
	}()
	<-started
	// Stop the server while the push is at the gateway.
	<-arrived
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	if got := <-status; got != http.StatusOK {
		t.Fatalf("in-flight push: status %d, want 200", got)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

// The drain grace covers the gateway budget and the note after it, however long the budget; so
// does the time a response may take to be written.
func TestShutdownGraceCoversTheGatewayBudget(t *testing.T) {
	for _, budget := range []time.Duration{time.Second, 10 * time.Second, 45 * time.Second, 60 * time.Second, 10 * time.Minute} {
		if g := shutdownGrace(budget); g < budget+drainMargin || g < minShutdownGrace {
			t.Errorf("budget %v: grace %v", budget, g)
		}
		if w := writeTimeout(budget); w < budget+drainMargin {
			t.Errorf("budget %v: write timeout %v", budget, w)
		}
	}
	if g := shutdownGrace(10 * time.Second); g != minShutdownGrace {
		t.Errorf("default budget: grace %v, want %v", g, minShutdownGrace)
	}
}

// A push still at the gateway when the drain grace runs out is waited for all the same: its
// caller gets the answer, its merchant note is written and its lease released before serve
// returns (and closes the store).
func TestServeWaitsForPushesPastTheGrace(t *testing.T) {
	e := newTestEnv(t)
	if _, _, err := e.run("import", e.writeDataset("demo.json", importableDemo(time.Now().UTC()))); err != nil {
		t.Fatal(err)
	}
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		w.Write([]byte(`{"pushId":"p1"}`))
	}))
	defer gw.Close()
	ctx := context.Background()
	st, err := store.Open(ctx, e.vars["BACKOFFICE_DATABASE_URL"], store.MustExist())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := Config{GatewayURL: gw.URL, GatewayTimeout: time.Minute}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	handler, pushes := newServing(cfg, st, nil, log, nil, nil, nil, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	graceOver := make(chan struct{})
	d := drain{grace: time.Millisecond, write: time.Minute, wait: func() { close(graceOver); pushes.Wait() }}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- serveUntilDone(sctx, []listener{{ln: ln, handler: handler}}, log, d)
	}()

	status := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/v1/crm/deployment-orders/"+demoOrder.String()+
			"/line-items/"+demoLineItem.String()+"/device-parameters", nil)
		req.Header.Set("Authorization", "Api-Key "+importedStaffKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			status <- 0
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	<-arrived
	stop()
	select {
	case <-graceOver:
	case err := <-served:
		t.Fatalf("serve returned (%v) with a push at the gateway", err)
	}
	close(release)
	<-served // the grace ran out: an error, but only after the push settled
	if got := <-status; got != http.StatusOK {
		t.Errorf("push caller: status %d, want 200", got)
	}
	ds, err := dataset.Export(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.MerchantNotes) != 1 {
		t.Errorf("%d merchant notes, want 1", len(ds.MerchantNotes))
	}
	if ok, err := st.AcquirePushLease(ctx, demoLineItem, "next", time.Now(), time.Minute); err != nil || !ok {
		t.Errorf("lease still held after serve returned: %v %v", ok, err)
	}
}

// serve's info lines wait to be written together (newServeLogger), but its start-up lines are
// written before it answers a request, and every line before serve returns: a stop right after
// the requests loses none of their lines.
func TestServeWritesEveryLogLineBeforeItReturns(t *testing.T) {
	e := newTestEnv(t)
	addr := freeAddr(t)
	_, stderr, stop := background(func(k string) string { return e.vars[k] }, "serve", "--addr", addr)
	const requests = 25
	var startLines string // the log when serve first answered
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		res, err := http.Get("http://" + addr + "/no-such-route")
		if err == nil {
			res.Body.Close()
			startLines = stderr.String()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start: %v\n%s", err, stderr.String())
		}
	}
	for range requests - 1 {
		res, err := http.Get("http://" + addr + "/no-such-route")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	if err := stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	logs := stderr.String()
	if !strings.Contains(startLines, `"msg":"serving"`) {
		t.Errorf("serve answered before its start-up lines were written:\n%s", startLines)
	}
	if n := strings.Count(logs, `"method":"GET","route":"unmatched"`); n != requests {
		t.Fatalf("%d access lines of %d requests:\n%s", n, requests, logs)
	}
}
