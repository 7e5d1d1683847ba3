// Package client is a Go client of the back-office service: a typed method per operation, errors
// as *Error, and an iterator over the pages of SAM action logs.
//
//	c, err := client.New("https://backoffice.example.com", client.WithAPIKey(key))
//	for log, err := range c.SAMActionLogs(ctx, leadID, 100) { … }
//
// Every call takes a context. A 429 (the caller's credential is over its rate) is retried after
// the answer's Retry-After, within the context: the service answers 429 before any operation
// runs, so even a push is safe to send again.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Client calls one back-office service. It is safe for concurrent use.
type Client struct {
	base          *url.URL
	http          *http.Client
	authorization string
	// rateLimitRetries bounds how many 429s one call waits out.
	rateLimitRetries int
	// sleep waits out a 429; tests replace it to move a fake clock instead.
	sleep func(ctx context.Context, d time.Duration) error
}

// Option configures a Client.
type Option func(*Client)

// WithAPIKey authenticates with an API key (Authorization: Api-Key <key>).
func WithAPIKey(key string) Option {
	return func(c *Client) { c.authorization = "Api-Key " + key }
}

// WithBearerToken authenticates with a session token (Authorization: Bearer <token>).
func WithBearerToken(token string) Option {
	return func(c *Client) { c.authorization = "Bearer " + token }
}

// WithHTTPClient sends requests through hc (its transport, timeouts and redirects policy)
// instead of http.DefaultClient.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.http = hc }
}

// WithRateLimitRetries sets how many 429 answers one call waits out before it returns the 429
// as an *Error (default DefaultRateLimitRetries; 0 never retries).
func WithRateLimitRetries(n int) Option {
	return func(c *Client) { c.rateLimitRetries = max(n, 0) }
}

// DefaultRateLimitRetries is how many 429s a call waits out unless WithRateLimitRetries says.
const DefaultRateLimitRetries = 5

// New returns a client of the service at baseURL (scheme and host, and a path prefix if the
// service is mounted under one).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("client: base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: want http(s)://host[/prefix]", baseURL)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	c := &Client{base: u, http: http.DefaultClient, rateLimitRetries: DefaultRateLimitRetries, sleep: sleep}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Error is every answer of the service that is not a success: its error body. Match it with
// errors.As. Code is one of the document's snake_case codes (not_found, push_in_progress, …);
// it is empty when the answer was not the service's error body (a proxy's page, say), and then
// Detail describes what came.
type Error struct {
	Status int
	Code   string
	Detail string
}

func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("backoffice: %d: %s", e.Status, e.Detail)
	}
	return fmt.Sprintf("backoffice: %d %s: %s", e.Status, e.Code, e.Detail)
}

// PushOption is an option of PushDeviceParameters.
type PushOption func(*http.Request)

// WithIdempotencyKey sends an Idempotency-Key with the push (1 to 255 printable ASCII
// characters): a push repeated with the same key by the same user gets the first one's answer
// back instead of running again, so a push whose answer was lost can be sent again safely.
func WithIdempotencyKey(key string) PushOption {
	return func(r *http.Request) { r.Header.Set("Idempotency-Key", key) }
}

// PushDeviceParameters re-sends a line item's device parameters to its gateway (seed 4.1) and
// returns the line item.
func (c *Client) PushDeviceParameters(ctx context.Context, orderID, lineItemID string, opts ...PushOption) (*LineItem, error) {
	var li LineItem
	path := "/v1/crm/deployment-orders/" + url.PathEscape(orderID) + "/line-items/" + url.PathEscape(lineItemID) + "/device-parameters"
	err := c.do(ctx, http.MethodPost, path, nil, func(r *http.Request) {
		for _, o := range opts {
			o(r)
		}
	}, &li)
	if err != nil {
		return nil, err
	}
	return &li, nil
}

// ListSAMActionLogs returns one page of an entity's SAM action logs (seed 4.2), newest first.
// page counts from 1; size 0 asks for the service's default (20), otherwise 1 to 100.
func (c *Client) ListSAMActionLogs(ctx context.Context, entityID string, page int64, size int) (*SAMActionLogPage, error) {
	q := url.Values{"page": {strconv.FormatInt(page, 10)}}
	if size != 0 {
		q.Set("size", strconv.Itoa(size))
	}
	var p SAMActionLogPage
	if err := c.do(ctx, http.MethodGet, "/v1/crm/sam-action-logs/"+url.PathEscape(entityID), q, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// SAMActionLogs iterates over every SAM action log of an entity, newest first, requesting
// pages of size (0: the service's default) until meta.page equals meta.totalPages. An error
// ends the iteration after it is yielded.
func (c *Client) SAMActionLogs(ctx context.Context, entityID string, size int) iter.Seq2[SAMActionLog, error] {
	return func(yield func(SAMActionLog, error) bool) {
		for page := int64(1); ; page++ {
			p, err := c.ListSAMActionLogs(ctx, entityID, page, size)
			if err != nil {
				yield(SAMActionLog{}, err)
				return
			}
			for _, l := range p.Data {
				if !yield(l, nil) {
					return
				}
			}
			// ">=": a list that shrank while it was read must not be walked forever.
			if p.Meta.Page >= p.Meta.TotalPages {
				return
			}
		}
	}
}

// ServiceAcceptance returns a lead's service acceptance (seed 4.3).
func (c *Client) ServiceAcceptance(ctx context.Context, leadID string) (*ServiceAcceptance, error) {
	var sa ServiceAcceptance
	if err := c.do(ctx, http.MethodGet, "/v1/crm/leads/"+url.PathEscape(leadID)+"/service-acceptance", nil, nil, &sa); err != nil {
		return nil, err
	}
	return &sa, nil
}

// DecryptPrincipalSSN returns a lead principal's SSN (seed 4.4). The service audits every call.
func (c *Client) DecryptPrincipalSSN(ctx context.Context, leadID, principalID string) (SSN, error) {
	var body struct {
		SSN string `json:"ssn"`
	}
	path := "/v1/crm/leads/" + url.PathEscape(leadID) + "/principals/" + url.PathEscape(principalID) + "/decrypt/ssn"
	if err := c.do(ctx, http.MethodGet, path, nil, nil, &body); err != nil {
		return "", err
	}
	return SSN(body.SSN), nil
}

// DeleteMerchantDocument deletes a merchant's document (seed 4.5); a second delete is a 404.
func (c *Client) DeleteMerchantDocument(ctx context.Context, merchantID, documentID string) error {
	path := "/v1/crm/merchants/" + url.PathEscape(merchantID) + "/documents/" + url.PathEscape(documentID)
	return c.do(ctx, http.MethodDelete, path, nil, nil, nil)
}

// maxErrorBody bounds what is read of an error answer.
const maxErrorBody = 64 << 10

// do sends one request, waiting out 429s, and decodes a 2xx body into out (when out is not nil).
func (c *Client) do(ctx context.Context, method, path string, query url.Values, prepare func(*http.Request), out any) error {
	// path holds escaped ids (a "/" in one stays %2F): join it as text, not through url.URL.Path.
	target := c.base.String() + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	for retries := 0; ; retries++ {
		req, err := http.NewRequestWithContext(ctx, method, target, nil)
		if err != nil {
			return fmt.Errorf("backoffice: %w", err)
		}
		req.Header.Set("Accept", "application/json")
		if c.authorization != "" {
			req.Header.Set("Authorization", c.authorization)
		}
		if prepare != nil {
			prepare(req)
		}
		res, err := c.http.Do(req)
		if err != nil {
			return fmt.Errorf("backoffice: %s %s: %w", method, path, err)
		}
		if res.StatusCode == http.StatusTooManyRequests && retries < c.rateLimitRetries {
			wait := retryAfter(res.Header.Get("Retry-After"), time.Now())
			// A wait that cannot end before the context's deadline is not begun: the 429 is the answer.
			if dl, ok := ctx.Deadline(); !ok || time.Until(dl) >= wait {
				drain(res)
				if err := c.sleep(ctx, wait); err != nil {
					return fmt.Errorf("backoffice: %s %s: waiting out a 429: %w", method, path, err)
				}
				continue
			}
		}
		return decode(res, out)
	}
}

func decode(res *http.Response, out any) error {
	defer drain(res)
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		if out == nil || res.StatusCode == http.StatusNoContent {
			return nil
		}
		if err := json.NewDecoder(res.Body).Decode(out); err != nil {
			return fmt.Errorf("backoffice: decode %d answer: %w", res.StatusCode, err)
		}
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	e := &Error{Status: res.StatusCode}
	if json.Unmarshal(b, e) != nil || e.Code == "" {
		*e = Error{Status: res.StatusCode, Detail: unexpected(res, b)}
	}
	e.Status = res.StatusCode // the HTTP status is the truth, whatever the body says
	return e
}

// unexpected describes an answer that is not the error body, in a line that is safe to log.
func unexpected(res *http.Response, body []byte) string {
	text := strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, string(bytes.TrimSpace(body)))
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	return fmt.Sprintf("unexpected answer (%s): %q", res.Header.Get("Content-Type"), text)
}

// drain reads a little of what is left so the connection can be reused, then closes the body.
func drain(res *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 4<<10))
	_ = res.Body.Close()
}

// retryAfter reads Retry-After (seconds or an HTTP date); absent or unreadable, one second.
func retryAfter(v string, now time.Time) time.Duration {
	if s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && s >= 0 {
		return time.Duration(min(s, 24*3600)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return time.Second
}

// sleep waits d, or less when ctx ends first (its error is returned).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
