// Package client is a Go client of the back-office service: a typed method per operation, errors
// as *Error, and iterators over the pages of SAM action logs and of the audit trail.
//
//	c, err := client.New("https://backoffice.example.com", client.WithAPIKey(key))
//	for log, err := range c.SAMActionLogs(ctx, leadID, 100) { … }
//
// Every call takes a context. A 429 (the caller's credential is over its rate) is retried after
// the answer's Retry-After, within the context: the service answers 429 before any operation
// runs, so even a push is safe to send again. WithResponse gives a call's answer headers
// (RateLimit, Retry-After, Idempotent-Replayed, X-Request-Id); an *Error carries them too.
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

	"backoffice/internal/pause"
)

// Client calls one back-office service. It is safe for concurrent use.
type Client struct {
	base          *url.URL
	http          *http.Client
	authorization string
	// token, when set, gives the access token of each request.
	token func(ctx context.Context) (string, error)
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

// WithTokenSource authenticates with access tokens of the organisation's identity provider
// (Authorization: Bearer <token>), asking token for one before each request, 429 retries
// included. token should hand back the token it holds until that is about to expire, and a new
// one then, as golang.org/x/oauth2's TokenSource does; its error ends the call, unsent.
func WithTokenSource(token func(ctx context.Context) (string, error)) Option {
	return func(c *Client) { c.token = token }
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
	c := &Client{base: u, http: http.DefaultClient, rateLimitRetries: DefaultRateLimitRetries, sleep: pause.For}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Error is every answer of the service that is not a success: its error body. Match it with
// errors.As. Code is one of the document's snake_case codes (not_found, push_in_progress, …);
// the set is open, so expect codes this package does not name, and act on Status. Code is empty
// when the answer was not the service's error body (a proxy's page, say), and then Detail
// describes what came.
type Error struct {
	Status int
	Code   string
	Detail string
	// Parameter, on a 400, names the request parameter at fault as the request spells it
	// (leadId, page, from, Idempotency-Key, …); "" otherwise.
	Parameter string
	// RetryAfter is the answer's Retry-After (409 push_in_progress, 429): how long to wait
	// before trying again; 0 when the answer has none.
	RetryAfter time.Duration
	// Header is the answer's header (X-Request-Id, RateLimit, …).
	Header http.Header
}

func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("backoffice: %d: %s", e.Status, e.Detail)
	}
	return fmt.Sprintf("backoffice: %d %s: %s", e.Status, e.Code, e.Detail)
}

// CallOption is an option of one call: WithResponse, or WithIdempotencyKey for a push or a
// deletion.
type CallOption interface {
	apply(*call)
}

// call is what the options of one call ask for.
type call struct {
	prepare  []func(*http.Request)
	response *Response
}

func newCall(opts []CallOption) *call {
	c := &call{}
	for _, o := range opts {
		o.apply(c)
	}
	return c
}

// PushOption is an option of a call that changes something: PushDeviceParameters and
// DeleteMerchantDocument.
type PushOption func(*http.Request)

func (o PushOption) apply(c *call) { c.prepare = append(c.prepare, o) }

// WithIdempotencyKey sends an Idempotency-Key (1 to 255 printable ASCII characters) with a push
// or a deletion. A push repeated with the same key by the same user gets the first one's answer
// back instead of running again, so a push whose answer was lost can be sent again safely. A
// deletion repeated with its key succeeds again (where without the key it would be a 404, like a
// wrong id): Response.IdempotentReplayed tells the repeat. A key names one request for 24 hours:
// the same key for another one is a 409 idempotency_key_reused.
func WithIdempotencyKey(key string) PushOption {
	return func(r *http.Request) { r.Header.Set("Idempotency-Key", key) }
}

// Response is a call's answer besides its body: its status and header, error or not.
type Response struct {
	Status int
	Header http.Header
}

// WithResponse makes a call fill r with its answer's status and header (the last answer, after
// any 429 waited out). A call that got no answer leaves r as it was.
func WithResponse(r *Response) CallOption { return responseOption{r} }

type responseOption struct{ r *Response }

func (o responseOption) apply(c *call) { c.response = o.r }

// RetryAfter is the answer's Retry-After (delta-seconds or an HTTP date) as a wait, and whether
// it had a readable one.
func (r *Response) RetryAfter() (time.Duration, bool) {
	return parseRetryAfter(r.Header.Get("Retry-After"), time.Now())
}

// RateLimit is the quota left, as the RateLimit header field says it (`"credential";r=57;t=1`:
// 57 requests can be made now, the whole quota is back after 1 s without requests); "" when the
// service has no rate limit configured.
func (r *Response) RateLimit() string { return r.Header.Get("RateLimit") }

// RateLimitPolicy is the quota, as the RateLimit-Policy header field says it
// (`"credential";q=100;w=2`: 100 requests per 2 s); "" when no rate limit is configured.
func (r *Response) RateLimitPolicy() string { return r.Header.Get("RateLimit-Policy") }

// IdempotentReplayed tells a push or a deletion answered with the kept answer of an earlier
// request with the same Idempotency-Key: it did not run again.
func (r *Response) IdempotentReplayed() bool { return r.Header.Get("Idempotent-Replayed") == "true" }

// RequestID is the answer's X-Request-Id, which the service's log lines of the request carry.
func (r *Response) RequestID() string { return r.Header.Get("X-Request-Id") }

// PushDeviceParameters re-sends a line item's device parameters to its gateway (operation 4.1)
// and returns the line item.
func (c *Client) PushDeviceParameters(ctx context.Context, orderID, lineItemID string, opts ...CallOption) (*LineItem, error) {
	var li LineItem
	path := "/v1/crm/deployment-orders/" + url.PathEscape(orderID) + "/line-items/" + url.PathEscape(lineItemID) + "/device-parameters"
	if err := c.do(ctx, http.MethodPost, path, nil, newCall(opts), &li); err != nil {
		return nil, err
	}
	return &li, nil
}

// ListSAMActionLogs returns one page of an entity's SAM action logs (operation 4.2), newest first.
// page counts from 1; size 0 asks for the service's default (20), otherwise 1 to 100.
func (c *Client) ListSAMActionLogs(ctx context.Context, entityID string, page int64, size int, opts ...CallOption) (*SAMActionLogPage, error) {
	var p SAMActionLogPage
	if err := c.do(ctx, http.MethodGet, "/v1/crm/sam-action-logs/"+url.PathEscape(entityID), pageQuery(nil, page, size), newCall(opts), &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// pageQuery adds page and size (0: the service's default) to q.
func pageQuery(q url.Values, page int64, size int) url.Values {
	if q == nil {
		q = url.Values{}
	}
	q.Set("page", strconv.FormatInt(page, 10))
	if size != 0 {
		q.Set("size", strconv.Itoa(size))
	}
	return q
}

// SAMActionLogs iterates over every SAM action log of an entity, newest first, requesting
// pages of size (0: the service's default) until meta.page equals meta.totalPages. An error
// ends the iteration after it is yielded.
func (c *Client) SAMActionLogs(ctx context.Context, entityID string, size int) iter.Seq2[SAMActionLog, error] {
	return allPages(func(page int64) ([]SAMActionLog, PageMeta, error) {
		p, err := c.ListSAMActionLogs(ctx, entityID, page, size)
		if err != nil {
			return nil, PageMeta{}, err
		}
		return p.Data, p.Meta, nil
	})
}

// allPages iterates over the records of page 1, 2, … as fetch returns them, until meta.page
// equals meta.totalPages. An error ends the iteration after it is yielded.
func allPages[T any](fetch func(page int64) ([]T, PageMeta, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for page := int64(1); ; page++ {
			data, meta, err := fetch(page)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, r := range data {
				if !yield(r, nil) {
					return
				}
			}
			// ">=": a list that shrank while it was read must not be walked forever.
			if meta.Page >= meta.TotalPages {
				return
			}
		}
	}
}

// AuditFilter narrows a read of the audit trail; the zero value reads it all. The filters combine
// with AND, as the query parameters of GET /v1/audit-events do.
type AuditFilter struct {
	ActorUserID string    // events of this user (a uuid)
	TargetID    string    // events about this object (a uuid)
	Action      string    // this action, exactly (principal.decrypt, …)
	Outcome     string    // granted, denied, not_found or invalid
	From        time.Time // events at or after this time
	To          time.Time // events before this time
}

func (f AuditFilter) query() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"actorUserId": f.ActorUserID, "targetId": f.TargetID, "action": f.Action, "outcome": f.Outcome} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if !f.From.IsZero() {
		q.Set("from", f.From.UTC().Format(time.RFC3339Nano))
	}
	if !f.To.IsZero() {
		q.Set("to", f.To.UTC().Format(time.RFC3339Nano))
	}
	return q
}

// ListAuditEvents returns one page of the audit trail, newest (highest Seq) first. page counts
// from 1; size 0 asks for the service's default (20), otherwise 1 to 100. Only staff users with
// audit_events.read may read it, and every read is itself audited.
func (c *Client) ListAuditEvents(ctx context.Context, f AuditFilter, page int64, size int, opts ...CallOption) (*AuditEventPage, error) {
	var p AuditEventPage
	if err := c.do(ctx, http.MethodGet, "/v1/audit-events", pageQuery(f.query(), page, size), newCall(opts), &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// AuditEvents iterates over the audit events f selects, newest first, each once, requesting pages
// of size (0: the service's default) until meta.page equals meta.totalPages. Events recorded
// while it reads (each read of the trail records one) push the older ones down a page: an
// event seen already (Seq not below the last yielded) is skipped, not yielded twice. An error
// ends the iteration after it is yielded.
func (c *Client) AuditEvents(ctx context.Context, f AuditFilter, size int) iter.Seq2[AuditEvent, error] {
	pages := allPages(func(page int64) ([]AuditEvent, PageMeta, error) {
		p, err := c.ListAuditEvents(ctx, f, page, size)
		if err != nil {
			return nil, PageMeta{}, err
		}
		return p.Data, p.Meta, nil
	})
	return func(yield func(AuditEvent, error) bool) {
		var last int64
		for e, err := range pages {
			if err == nil && last != 0 && e.Seq >= last {
				continue
			}
			last = e.Seq
			if !yield(e, err) {
				return
			}
		}
	}
}

// AuditEventProof returns an audit event beside its c2sp.org/tlog-proof@v1 against the newest
// signed checkpoint (docs/compliance.md: check it with tools of your own). An event no checkpoint
// covers yet is an *Error with Status 409 and Code not_checkpointed: the next checkpoint will.
// The read is itself audited.
func (c *Client) AuditEventProof(ctx context.Context, eventID string, opts ...CallOption) (*AuditEventProof, error) {
	var p AuditEventProof
	if err := c.do(ctx, http.MethodGet, "/v1/audit-events/"+url.PathEscape(eventID)+"/proof", nil, newCall(opts), &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// AuditLogTile returns a tile of the audit trail's Merkle tree (c2sp.org/tlog-tiles, height 8) by
// its path below tile/: "0/x001/067", "1/000.p/17", "entries/067.p/5". A tile the tree does not
// hold is an *Error with Status 404. golang.org/x/mod/sumdb/tlog checks tiles
// (tlog.TileHashReader) when they are read through its tlog.TileReader.
func (c *Client) AuditLogTile(ctx context.Context, path string, opts ...CallOption) ([]byte, error) {
	if path == "" || strings.Trim(path, "0123456789abcdefghijklmnopqrstuvwxyz./") != "" {
		return nil, fmt.Errorf("backoffice: tile path %q: want digits, x, entries, . and / only", path)
	}
	var tile []byte
	if err := c.do(ctx, http.MethodGet, "/v1/audit-log/tile/"+path, nil, newCall(opts), &tile); err != nil {
		return nil, err
	}
	return tile, nil
}

// maxTile bounds what is read of a tile: a full tile is 8 KiB of hashes, or 256 leaves.
const maxTile = 1 << 20

// ServiceAcceptance returns a lead's service acceptance (operation 4.3).
func (c *Client) ServiceAcceptance(ctx context.Context, leadID string, opts ...CallOption) (*ServiceAcceptance, error) {
	var sa ServiceAcceptance
	if err := c.do(ctx, http.MethodGet, "/v1/crm/leads/"+url.PathEscape(leadID)+"/service-acceptance", nil, newCall(opts), &sa); err != nil {
		return nil, err
	}
	return &sa, nil
}

// DecryptPrincipalSSN returns a lead principal's SSN (operation 4.4). The service audits every
// call.
func (c *Client) DecryptPrincipalSSN(ctx context.Context, leadID, principalID string, opts ...CallOption) (SSN, error) {
	var body struct {
		SSN string `json:"ssn"`
	}
	path := "/v1/crm/leads/" + url.PathEscape(leadID) + "/principals/" + url.PathEscape(principalID) + "/decrypt/ssn"
	if err := c.do(ctx, http.MethodGet, path, nil, newCall(opts), &body); err != nil {
		return "", err
	}
	return SSN(body.SSN), nil
}

// DeleteMerchantDocument deletes a merchant's document (operation 4.5); a second delete is a 404,
// unless both were sent WithIdempotencyKey with the same key: then the second succeeds too, and
// WithResponse's IdempotentReplayed says it was the first one's answer.
func (c *Client) DeleteMerchantDocument(ctx context.Context, merchantID, documentID string, opts ...CallOption) error {
	path := "/v1/crm/merchants/" + url.PathEscape(merchantID) + "/documents/" + url.PathEscape(documentID)
	return c.do(ctx, http.MethodDelete, path, nil, newCall(opts), nil)
}

// maxErrorBody bounds what is read of an error answer.
const maxErrorBody = 64 << 10

// do sends one request, waiting out 429s, and decodes a 2xx body into out (when out is not nil).
func (c *Client) do(ctx context.Context, method, path string, query url.Values, opts *call, out any) error {
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
		if err := c.authorize(ctx, req); err != nil {
			return fmt.Errorf("backoffice: %s %s: %w", method, path, err)
		}
		for _, prepare := range opts.prepare {
			prepare(req)
		}
		res, err := c.http.Do(req)
		if err != nil {
			return fmt.Errorf("backoffice: %s %s: %w", method, path, err)
		}
		if res.StatusCode == http.StatusTooManyRequests && retries < c.rateLimitRetries {
			wait, ok := parseRetryAfter(res.Header.Get("Retry-After"), time.Now())
			if !ok {
				wait = time.Second
			}
			// A wait that cannot end before the context's deadline is not begun: the 429 is the answer.
			if dl, ok := ctx.Deadline(); !ok || time.Until(dl) >= wait {
				drain(res)
				if err := c.sleep(ctx, wait); err != nil {
					return fmt.Errorf("backoffice: %s %s: waiting out a 429: %w", method, path, err)
				}
				continue
			}
		}
		if opts.response != nil {
			*opts.response = Response{Status: res.StatusCode, Header: res.Header}
		}
		return decode(res, out)
	}
}

// authorize sets the request's credential: the token source's token, or the fixed one.
func (c *Client) authorize(ctx context.Context, req *http.Request) error {
	if c.token != nil {
		tok, err := c.token(ctx)
		if err != nil {
			return fmt.Errorf("access token: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		return nil
	}
	if c.authorization != "" {
		req.Header.Set("Authorization", c.authorization)
	}
	return nil
}

func decode(res *http.Response, out any) error {
	defer drain(res)
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		if out == nil || res.StatusCode == http.StatusNoContent {
			return nil
		}
		if raw, ok := out.(*[]byte); ok {
			b, err := io.ReadAll(io.LimitReader(res.Body, maxTile+1))
			if err == nil && len(b) > maxTile {
				err = fmt.Errorf("over %d bytes", maxTile)
			}
			if err != nil {
				return fmt.Errorf("backoffice: read %d answer: %w", res.StatusCode, err)
			}
			*raw = b
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
	e.RetryAfter, _ = parseRetryAfter(res.Header.Get("Retry-After"), time.Now())
	e.Header = res.Header
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

// parseRetryAfter reads Retry-After (seconds or an HTTP date, at most a day), and whether it was
// there and readable.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && s >= 0 {
		return time.Duration(min(s, 24*3600)) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), 24*time.Hour), true
	}
	return 0, false
}
