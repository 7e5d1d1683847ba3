// Package gateway pushes device parameters to the terminal gateway, and
// simulates that gateway for development and tests. The protocol is the one
// of docs/device-parameters.md: one PUT per terminal, retried with backoff within a
// total time budget, never following redirects.
package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"backoffice/internal/pause"
	"backoffice/internal/reqlog"
)

// DefaultTimeout is the total budget of one push when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Config configures a Client.
type Config struct {
	// BaseURL is the gateway's address, e.g. "https://gw.example.com/api".
	// Empty or unusable: every push fails at once as KindUnavailable.
	BaseURL string
	// Token is sent as "Authorization: Bearer <Token>"; empty sends none.
	Token string
	// Timeout is the total budget of one Push, retries and waits included.
	// Zero means DefaultTimeout.
	Timeout time.Duration
	// AttemptTimeout, when positive, cuts one request short so that a
	// gateway that hangs once still leaves time for a retry. Zero lets an
	// attempt run for the whole remaining budget: a gateway that is slow but
	// answers within the budget must be pushed to, on the first try, and
	// only an operator who knows its latency can pick a shorter bound.
	AttemptTimeout time.Duration
	// HTTPClient, if set, supplies the transport (and any client timeout).
	// The Client works on a copy whose redirect policy is replaced: the
	// bearer token must never travel to another address.
	HTTPClient *http.Client
	// Rand returns a number in [0, 1) for backoff jitter; nil means
	// math/rand/v2. Tests inject it to make delays predictable.
	Rand func() float64
	// Logger receives one debug line per attempt; nil logs nothing.
	Logger *slog.Logger
	// TracerProvider, when set, gets a span per attempt. Either way a request
	// carries the W3C traceparent of the span in its context, if any.
	TracerProvider trace.TracerProvider
}

// String masks the token, so that printing a Config cannot leak it.
func (c Config) String() string {
	return fmt.Sprintf("{BaseURL:%s Token:%s Timeout:%s AttemptTimeout:%s}",
		c.BaseURL, mask(c.Token), c.Timeout, c.AttemptTimeout)
}

// GoString masks the token under %#v too.
func (c Config) GoString() string { return "gateway.Config" + c.String() }

// LogValue masks the token in structured logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("baseURL", c.BaseURL),
		slog.String("token", mask(c.Token)),
		slog.Float64("timeout_ms", milliseconds(c.Timeout)),
		slog.Float64("attempt_timeout_ms", milliseconds(c.AttemptTimeout)),
	)
}

func mask(secret string) string {
	if secret == "" {
		return ""
	}
	return "[redacted]"
}

// Client pushes parameters to one gateway. It is safe for concurrent use.
type Client struct {
	base           *url.URL
	baseErr        error
	token          string
	timeout        time.Duration
	attemptTimeout time.Duration
	http           *http.Client
	rand           func() float64
	log            *slog.Logger
	tracer         trace.Tracer // nil: no spans
}

// Result is a successful push.
type Result struct {
	// PushID is the gateway's id for the push, "" when its answer had none.
	PushID string
	// Attempts is how many requests it took.
	Attempts int
}

// New returns a Client for cfg. A bad BaseURL is not an error here: it is
// reported by every Push, so that a misconfigured gateway is an outcome of
// operation 4.1 (recorded in its merchant note) rather than a failed start.
func New(cfg Config) *Client {
	c := &Client{
		token:          cfg.Token,
		timeout:        cfg.Timeout,
		attemptTimeout: cfg.AttemptTimeout,
		rand:           cfg.Rand,
		log:            cfg.Logger,
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	// Each attempt's line carries the id of the request that pushes (and its trace id).
	c.log = reqlog.Wrap(c.log)
	if cfg.TracerProvider != nil {
		c.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	c.base, c.baseErr = parseBaseURL(cfg.BaseURL)
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.rand == nil {
		c.rand = mathrand.Float64
	}
	c.http = &http.Client{}
	if cfg.HTTPClient != nil {
		copied := *cfg.HTTPClient
		c.http = &copied
	}
	c.http.CheckRedirect = func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}
	return c
}

func parseBaseURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("no gateway URL is configured")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("the configured gateway URL is not an http(s) URL")
	}
	return u, nil
}

// Push sends payload, encoded with encoding/json (pass a json.RawMessage to
// send bytes as they are), as the parameters of terminalID.
//
// A failed push is an *Error. The one exception is the caller's own context:
// when ctx is canceled or its deadline passes, Push stops and returns
// ctx.Err() as is, because the caller, not the gateway, ended the push.
// Other errors (an empty terminal id, a payload that cannot be encoded) are
// programming errors.
func (c *Client) Push(ctx context.Context, terminalID string, payload any) (Result, error) {
	return c.PushKeyed(ctx, terminalID, "", payload, nil)
}

// PushKeyed is Push with the Idempotency-Key the gateway sees given by the caller ("" for a fresh
// one): pushes given the same key are one push to a gateway that honours idempotency. before, when
// not nil, is called with each attempt's number before that attempt is sent: when it fails, the
// attempt is not sent, and PushKeyed returns its error as it is (the caller records each request
// before the gateway can see it).
func (c *Client) PushKeyed(ctx context.Context, terminalID, key string, payload any, before func(attempt int) error) (Result, error) {
	if terminalID == "" {
		return Result{}, errors.New("gateway: empty terminal id")
	}
	if c.baseErr != nil {
		return Result{}, &Error{Kind: KindUnavailable, Reason: c.baseErr.Error()}
	}
	body, err := json.Marshal(payload)
	if err != nil {
		return Result{}, fmt.Errorf("gateway: encode payload: %w", err)
	}
	if key == "" {
		key = rand.Text()
	}
	p := push{
		client:     c,
		terminalID: terminalID,
		url:        c.endpoint(terminalID),
		body:       body,
		// One key for every attempt, so the gateway can tell a retry from a
		// new push and apply it once.
		idempotencyKey: key,
		before:         before,
	}
	return p.run(ctx)
}

// endpoint is {BaseURL}/v1/terminals/{terminalID}/parameters. Both Path and
// RawPath are set so that a "/" in the id travels as %2F, inside one path
// segment, instead of being taken as a separator.
func (c *Client) endpoint(terminalID string) string {
	u := *c.base
	u.RawQuery, u.Fragment = "", ""
	basePath := strings.TrimSuffix(u.Path, "/")
	baseRaw := strings.TrimSuffix(u.EscapedPath(), "/")
	u.Path = basePath + "/v1/terminals/" + terminalID + "/parameters"
	u.RawPath = baseRaw + "/v1/terminals/" + escapeSegment(terminalID) + "/parameters"
	return u.String()
}

// escapeSegment is url.PathEscape, except that the ids "." and ".." are sent
// as %2E: as plain dots, servers (Go's ServeMux among them) would clean them
// away as path navigation.
func escapeSegment(s string) string {
	if s == "." || s == ".." {
		return strings.Repeat("%2E", len(s))
	}
	return url.PathEscape(s)
}

// push is one call of Push: what every attempt of it sends.
type push struct {
	client         *Client
	terminalID     string
	url            string
	body           []byte
	idempotencyKey string
	before         func(attempt int) error // nil: nothing to do before an attempt
}

func (p *push) run(ctx context.Context) (Result, error) {
	budget, cancel := context.WithTimeout(ctx, p.client.timeout)
	defer cancel()
	delays := backoff{rand: p.client.rand}
	var answered *retryable // the last retryable answer the gateway gave, nil before one
	for attempts := 1; ; attempts++ {
		if p.before != nil {
			if err := p.before(attempts); err != nil {
				return Result{}, err
			}
		}
		start := time.Now()
		pushID, status, err := p.attempt(budget, attempts)
		took := time.Since(start)
		if err == nil {
			p.logAttempt(ctx, attempts, status, nil, took, noRetry)
			return Result{PushID: pushID, Attempts: attempts}, nil
		}
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		var again *retryable
		if !errors.As(err, &again) {
			p.logAttempt(ctx, attempts, status, err, took, noRetry)
			return Result{}, withAttempts(err, attempts)
		}
		if again.status != 0 {
			answered = again
		}
		delay := max(delays.next(), again.after)
		if !fitsBudget(budget, delay) {
			p.logAttempt(ctx, attempts, status, err, took, noRetry)
			return Result{}, gaveUp(again, answered, attempts)
		}
		p.logAttempt(ctx, attempts, status, err, took, delay)
		if pause.For(budget, delay) != nil {
			if ctx.Err() != nil {
				return Result{}, ctx.Err()
			}
			return Result{}, gaveUp(again, answered, attempts)
		}
	}
}

// gaveUp is the error of a push whose budget ran out after its last attempt, last. When that
// attempt got no answer but an earlier one did, the reason keeps the gateway's answer first:
// "answered 503" tells an operator more than that the last try ran out of time.
func gaveUp(last, answered *retryable, attempts int) *Error {
	if answered == nil || answered == last {
		return last.unavailable(attempts)
	}
	e := answered.unavailable(attempts)
	e.Reason = answered.reason + ", then " + last.reason
	e.Cause = last.cause
	return e
}

// noRetry is the delay logged after an attempt that is not retried.
const noRetry time.Duration = -1

// logAttempt tells, at debug level, how one attempt went and what follows it: a retry after
// delay, or none. It names the terminal, never the token or the payload.
func (p *push) logAttempt(ctx context.Context, n, status int, err error, took, delay time.Duration) {
	log := p.client.log
	if !log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs := []slog.Attr{
		slog.String("terminal_id", p.terminalID),
		slog.Int("attempt", n),
		slog.Float64("duration_ms", milliseconds(took)),
	}
	if status != 0 {
		attrs = append(attrs, slog.Int("status", status))
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", attemptError(err)))
	}
	attrs = append(attrs, slog.Bool("retry", delay >= 0))
	if delay >= 0 {
		attrs = append(attrs, slog.Float64("delay_ms", milliseconds(delay)))
	}
	log.LogAttrs(ctx, slog.LevelDebug, "gateway attempt", attrs...)
}

// attemptError is what went wrong with one attempt, with the transport error behind it.
func attemptError(err error) string {
	var (
		again *retryable
		final *Error
	)
	switch {
	case errors.As(err, &again) && again.cause != nil:
		return again.reason + ": " + again.cause.Error()
	case errors.As(err, &final) && final.Cause != nil:
		return final.Reason + ": " + final.Cause.Error()
	case errors.As(err, &final):
		return final.Reason
	}
	return err.Error()
}

// milliseconds is d for logs, which carry durations in milliseconds with the unit in the key.
func milliseconds(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// attempt sends the request once, bounded by the remaining budget and by the
// per-attempt timeout when one is set. It returns the push id on success, a
// *retryable when trying again may help, or an *Error when it will not, and
// the gateway's status when it answered.
func (p *push) attempt(ctx context.Context, n int) (string, int, error) {
	if p.client.tracer == nil {
		return p.send(ctx)
	}
	ctx, span := p.client.startAttemptSpan(ctx, n)
	pushID, status, err := p.send(ctx)
	endAttemptSpan(span, status, err)
	return pushID, status, err
}

// send is one attempt's request and the reading of its answer.
func (p *push) send(ctx context.Context) (string, int, error) {
	if p.client.attemptTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.client.attemptTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, p.url, bytes.NewReader(p.body))
	if err != nil {
		return "", 0, &Error{Kind: KindUnavailable, Reason: "the gateway URL cannot be used", Cause: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Idempotency-Key", p.idempotencyKey)
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	if p.client.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.client.token)
	}
	resp, err := p.client.http.Do(req)
	if err != nil {
		return "", 0, transportFailure(ctx, err)
	}
	defer resp.Body.Close()
	// Read the body while the attempt's context is still alive.
	body := p.client.redact(readBody(resp.Body))
	pushID, err := classify(resp, body, time.Now())
	return pushID, resp.StatusCode, err
}

// redact blanks the token out of a gateway answer before any of it can become
// an error reason: a gateway that echoes request headers must not get the
// token into a merchant note.
func (c *Client) redact(body []byte) []byte {
	if c.token == "" {
		return body
	}
	return bytes.ReplaceAll(body, []byte(c.token), []byte("[redacted]"))
}

func withAttempts(err error, attempts int) error {
	var e *Error
	if errors.As(err, &e) {
		e.Attempts = attempts
	}
	return err
}

// retryable is an attempt that failed in a way a later attempt may not.
type retryable struct {
	reason string
	status int
	after  time.Duration // the gateway's Retry-After, 0 if none
	cause  error
}

func (r *retryable) Error() string { return r.reason }

func (r *retryable) unavailable(attempts int) *Error {
	return &Error{
		Kind:       KindUnavailable,
		Reason:     r.reason,
		Attempts:   attempts,
		StatusCode: r.status,
		Cause:      r.cause,
	}
}

func transportFailure(ctx context.Context, err error) *retryable {
	reason := "the gateway could not be reached"
	if ctx.Err() != nil {
		reason = "the gateway did not answer in time"
	}
	return &retryable{reason: reason, cause: err}
}
