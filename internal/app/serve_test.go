package app

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Stopping serve lets an in-flight request finish before it exits.
func TestServeDrainsInFlightRequests(t *testing.T) {
	e := newTestEnv(t)
	if _, _, err := e.run("import", e.writeDataset("demo.json", demoDataset(time.Now().UTC()))); err != nil {
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
			req.Header.Set("Authorization", "Api-Key "+demoAPIKey)
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

// A tracing setting serve cannot honour stops it at start, not silently later.
func TestServeRefusesUnsupportedTracingSettings(t *testing.T) {
	e := newTestEnv(t)
	e.vars["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:4317"
	e.vars["OTEL_EXPORTER_OTLP_PROTOCOL"] = "grpc"
	_, _, err := e.run("serve", "--addr", freeAddr(t))
	if err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_PROTOCOL") {
		t.Fatalf("serve = %v, want an error naming OTEL_EXPORTER_OTLP_PROTOCOL", err)
	}
}
