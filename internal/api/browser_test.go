package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// A headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe: JSON
// messages separated by NUL bytes on file descriptors 3 and 4), so that the browser tests need no
// WebSocket client and no dependency. The tests skip when chromium is not installed; CI (.ci/run)
// installs it.

// browserHang bounds one DevTools exchange: a browser that stops answering fails the test instead
// of holding it until go test's own timeout. It is not a timing assertion.
const browserHang = 60 * time.Second

type browser struct {
	t       testing.TB
	cmd     *exec.Cmd
	toB     io.WriteCloser
	msgs    chan cdpMessage
	backlog []cdpMessage // events read while waiting for something else
	lastID  int
}

type cdpMessage struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// startBrowser starts a headless Chromium with a fresh profile, or skips the test when there is
// none. It stops with the test.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (apt-get install chromium): the browser tests are skipped")
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", "--disable-extensions", "--remote-debugging-pipe",
		"--user-data-dir="+t.TempDir(), "about:blank")
	// The child reads commands on its fd 3 and writes answers on its fd 4.
	cmdR, toB, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromB, ansW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles = []*os.File{cmdR, ansW}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	cmdR.Close()
	ansW.Close()
	b := &browser{t: t, cmd: cmd, toB: toB, msgs: make(chan cdpMessage, 64)}
	go b.read(fromB)
	t.Cleanup(func() {
		toB.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		fromB.Close()
		if t.Failed() {
			t.Logf("chromium's standard error:\n%s", stderr.String())
		}
	})
	return b
}

// read turns the NUL-separated messages from the browser into values; it ends with the pipe.
func (b *browser) read(r io.Reader) {
	defer close(b.msgs)
	br := bufio.NewReader(r)
	for {
		raw, err := br.ReadBytes(0)
		if err != nil {
			return
		}
		var m cdpMessage
		if json.Unmarshal(raw[:len(raw)-1], &m) == nil {
			b.msgs <- m
		}
	}
}

// next is the browser's next message.
func (b *browser) next() (cdpMessage, error) {
	select {
	case m, ok := <-b.msgs:
		if !ok {
			return m, errors.New("chromium closed its DevTools pipe")
		}
		return m, nil
	case <-time.After(browserHang):
		return cdpMessage{}, fmt.Errorf("chromium did not answer in %s", browserHang)
	}
}

// call sends one command (to the browser, or to a page's session) and returns its result.
func (b *browser) call(session, method string, params any, result any) error {
	b.lastID++
	id := b.lastID
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	msg, err := json.Marshal(cdpMessage{ID: id, Method: method, Params: p, SessionID: session})
	if err != nil {
		return err
	}
	if _, err := b.toB.Write(append(msg, 0)); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	for {
		m, err := b.next()
		if err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		if m.ID != id {
			if m.Method != "" {
				b.backlog = append(b.backlog, m)
			}
			continue
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		if result == nil {
			return nil
		}
		return json.Unmarshal(m.Result, result)
	}
}

// waitEvent returns once the session has had the event, whether before this call or after.
func (b *browser) waitEvent(session, method string) error {
	for i, m := range b.backlog {
		if m.SessionID == session && m.Method == method {
			b.backlog = append(b.backlog[:i], b.backlog[i+1:]...)
			return nil
		}
	}
	for {
		m, err := b.next()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", method, err)
		}
		if m.SessionID == session && m.Method == method {
			return nil
		}
		if m.Method != "" {
			b.backlog = append(b.backlog, m)
		}
	}
}

// page is one browser tab.
type page struct {
	b       *browser
	session string
}

// open makes a new tab and loads url in it, returning once its load event has fired.
func (b *browser) open(url string) *page {
	b.t.Helper()
	var target struct{ TargetID string }
	if err := b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		b.t.Fatal(err)
	}
	var att struct{ SessionID string }
	if err := b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		b.t.Fatal(err)
	}
	p := &page{b: b, session: att.SessionID}
	for _, domain := range []string{"Page.enable", "Log.enable", "Runtime.enable"} {
		if err := b.call(p.session, domain, nil, nil); err != nil {
			b.t.Fatal(err)
		}
	}
	var nav struct{ ErrorText string }
	if err := b.call(p.session, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		b.t.Fatal(err)
	}
	if nav.ErrorText != "" {
		b.t.Fatalf("navigate to %s: %s", url, nav.ErrorText)
	}
	if err := b.waitEvent(p.session, "Page.loadEventFired"); err != nil {
		b.t.Fatal(err)
	}
	return p
}

// eval runs a JavaScript expression in the page, awaits it when it is a promise, and decodes its
// JSON value into out. An exception thrown by the script is a test failure.
func (p *page) eval(expr string, out any) {
	p.b.t.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	err := p.b.call(p.session, "Runtime.evaluate", map[string]any{
		"expression": expr, "awaitPromise": true, "returnByValue": true}, &res)
	if err != nil {
		p.b.t.Fatal(err)
	}
	if e := res.ExceptionDetails; e != nil {
		p.b.t.Fatalf("script failed: %s %s", e.Text, e.Exception.Description)
	}
	if out != nil {
		if err := json.Unmarshal(res.Result.Value, out); err != nil {
			p.b.t.Fatalf("script's value %s: %v", res.Result.Value, err)
		}
	}
}

// problems are the errors the page has reported so far: console and browser log errors
// (a refused load, a Content-Security-Policy violation) and uncaught exceptions.
func (p *page) problems() []string {
	var out []string
	for _, m := range p.b.backlog {
		if m.SessionID != p.session {
			continue
		}
		switch m.Method {
		case "Log.entryAdded":
			var e struct {
				Entry struct{ Level, Text, URL string }
			}
			if json.Unmarshal(m.Params, &e) == nil && e.Entry.Level == "error" {
				out = append(out, e.Entry.Text+" "+e.Entry.URL)
			}
		case "Runtime.exceptionThrown", "Runtime.consoleAPICalled":
			var e struct {
				Type             string
				ExceptionDetails *struct{ Text string }
			}
			if json.Unmarshal(m.Params, &e) == nil && (e.ExceptionDetails != nil || e.Type == "error") {
				out = append(out, string(m.Params))
			}
		}
	}
	return out
}
