package app

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The gateway-sim command speaks the gateway protocol: what is PUT comes back on GET.
func TestGatewaySimCommand(t *testing.T) {
	addr := freeAddr(t)
	_, _, stop := background(noEnv, "gateway-sim", "--addr", addr, "--token", "t0k")
	url := "http://" + addr + "/v1/terminals/T%2F1/parameters"
	var resp *http.Response
	var err error
	for i := 0; i < 100; i++ {
		req, _ := http.NewRequest(http.MethodPut, url, strings.NewReader(`{"terminalId":"T/1"}`))
		req.Header.Set("Authorization", "Bearer t0k")
		req.Header.Set("Content-Type", "application/json")
		if resp, err = http.DefaultClient.Do(req); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer t0k")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(body, []byte(`"T/1"`)) {
		t.Fatalf("GET: %d %s", resp.StatusCode, body)
	}
	if err := stop(); err != nil {
		t.Fatalf("gateway-sim exited with %v", err)
	}
}
