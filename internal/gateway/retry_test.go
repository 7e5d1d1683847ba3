package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// These tests run in a synctest bubble against an in-memory gateway, so that
// backoff delays are exact and a 10 s budget takes no real time.

func newBubbleClient(gw http.Handler, cfg Config) *Client {
	cfg.BaseURL = "http://gateway.test"
	cfg.HTTPClient = &http.Client{Transport: handlerTransport{gw}}
	if cfg.Rand == nil {
		cfg.Rand = fixedRand
	}
	return New(cfg)
}

// gaps returns the time between consecutive requests.
func gaps(reqs []received) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(reqs); i++ {
		out = append(out, reqs[i].at.Sub(reqs[i-1].at))
	}
	return out
}

func TestPushRetriesThenSucceeds(t *testing.T) {
	for _, status := range []int{408, 429, 500, 502, 503, 504} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gw := &recorder{answers: []answer{
					{status: status}, {status: status}, {status: 200, body: `{"pushId": "p-9"}`},
				}}
				res, err := newBubbleClient(gw, Config{}).Push(context.Background(), "T-1", 1)
				if err != nil {
					t.Fatalf("Push: %v", err)
				}
				if diff := cmp.Diff(Result{PushID: "p-9", Attempts: 3}, res); diff != "" {
					t.Errorf("result mismatch (-want +got):\n%s", diff)
				}
				reqs := gw.received()
				for _, r := range reqs {
					if r.idempotencyKey == "" || r.idempotencyKey != reqs[0].idempotencyKey {
						t.Errorf("Idempotency-Key %q differs from the first %q", r.idempotencyKey, reqs[0].idempotencyKey)
					}
					if r.body != "1" {
						t.Errorf("retry sent body %q, want the payload again", r.body)
					}
				}
				// Half of each cap: 100 ms, then 200 ms.
				want := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}
				if diff := cmp.Diff(want, gaps(reqs)); diff != "" {
					t.Errorf("delays mismatch (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestPushRetriesAfterConnectionError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		transport := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			calls++
			if calls == 1 {
				return nil, errors.New("connection reset by peer")
			}
			return handlerTransport{&recorder{answers: []answer{{status: 200}}}}.RoundTrip(r)
		})
		c := New(Config{BaseURL: "http://gateway.test", HTTPClient: &http.Client{Transport: transport}})
		res, err := c.Push(context.Background(), "T-1", 1)
		if err != nil || res.Attempts != 2 {
			t.Errorf("Push = %+v, %v; want success on attempt 2", res, err)
		}
	})
}

func TestPushPersistent5xxGivesUpWithinBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := &recorder{answers: []answer{{status: 503, body: "down"}}}
		const budget = 2 * time.Second
		start := time.Now()
		_, err := newBubbleClient(gw, Config{Timeout: budget}).Push(context.Background(), "T-1", 1)
		elapsed := time.Since(start)

		want := &Error{Kind: KindUnavailable, Reason: "gateway answered 503 Service Unavailable",
			Attempts: 7, StatusCode: 503}
		if diff := cmp.Diff(want, asError(t, err)); diff != "" {
			t.Errorf("error mismatch (-want +got):\n%s", diff)
		}
		// Caps 100, 200, 400, 800, 1000, 1000 ms, halved by the fixed jitter;
		// the next 500 ms would end at 2.25 s, past the budget, so it stops
		// at 1.75 s instead of sleeping into certain failure.
		ms := time.Millisecond
		wantGaps := []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 500 * ms, 500 * ms}
		if diff := cmp.Diff(wantGaps, gaps(gw.received())); diff != "" {
			t.Errorf("delays mismatch (-want +got):\n%s", diff)
		}
		if elapsed != 1750*ms {
			t.Errorf("gave up after %v, want 1.75s", elapsed)
		}
	})
}

func TestBackoffFullJitter(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		rand float64
		want []time.Duration
	}{
		{"top of each cap", 1, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second, time.Second}},
		{"bottom", 0, []time.Duration{0, 0, 0, 0, 0, 0, 0}},
		{"a quarter", 0.25, []time.Duration{25 * ms, 50 * ms, 100 * ms, 200 * ms, 250 * ms, 250 * ms, 250 * ms}},
		{"out of range is clamped", 7, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second, time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := backoff{rand: func() float64 { return tt.rand }}
			var got []time.Duration
			for range tt.want {
				got = append(got, b.next())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("delays mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPushHonoursRetryAfter(t *testing.T) {
	tests := []struct {
		name       string
		retryAfter func(now time.Time) string
		want       time.Duration
	}{
		{"seconds", func(time.Time) string { return "2" }, 2 * time.Second},
		{"HTTP date", func(now time.Time) string { return now.Add(3 * time.Second).UTC().Format(http.TimeFormat) }, 3 * time.Second},
		{"date in the past keeps the backoff", func(now time.Time) string {
			return now.Add(-time.Hour).UTC().Format(http.TimeFormat)
		}, 50 * time.Millisecond},
		{"shorter than the backoff keeps the backoff", func(time.Time) string { return "0" }, 50 * time.Millisecond},
		{"garbage keeps the backoff", func(time.Time) string { return "soon" }, 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gw := &recorder{answers: []answer{
					{status: 429, retryAfter: tt.retryAfter(time.Now())}, {status: 200},
				}}
				_, err := newBubbleClient(gw, Config{}).Push(context.Background(), "T-1", 1)
				if err != nil {
					t.Fatalf("Push: %v", err)
				}
				if diff := cmp.Diff([]time.Duration{tt.want}, gaps(gw.received())); diff != "" {
					t.Errorf("delay mismatch (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestPushRetryAfterBeyondBudgetGivesUpAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := &recorder{answers: []answer{{status: 503, retryAfter: "30"}}}
		start := time.Now()
		_, err := newBubbleClient(gw, Config{Timeout: 10 * time.Second}).Push(context.Background(), "T-1", 1)
		if elapsed := time.Since(start); elapsed != 0 {
			t.Errorf("gave up after %v, want at once", elapsed)
		}
		want := &Error{Kind: KindUnavailable, Reason: "gateway answered 503 Service Unavailable",
			Attempts: 1, StatusCode: 503}
		if diff := cmp.Diff(want, asError(t, err)); diff != "" {
			t.Errorf("error mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestPushSlowGatewayWithinBudgetOnFirstTry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := &recorder{answers: []answer{{status: 200, body: `{"pushId": "p-slow"}`, delay: 1500 * time.Millisecond}}}
		start := time.Now()
		res, err := newBubbleClient(gw, Config{Timeout: 3 * time.Second}).Push(context.Background(), "T-1", 1)
		if err != nil {
			t.Fatalf("Push: %v", err)
		}
		if diff := cmp.Diff(Result{PushID: "p-slow", Attempts: 1}, res); diff != "" {
			t.Errorf("result mismatch (-want +got):\n%s", diff)
		}
		if n := len(gw.received()); n != 1 {
			t.Errorf("gateway got %d requests, want 1", n)
		}
		if elapsed := time.Since(start); elapsed != 1500*time.Millisecond {
			t.Errorf("pushed after %v, want 1.5s", elapsed)
		}
	})
}

func TestPushHangingGatewayTakesTheWholeBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := &recorder{answers: []answer{{hang: true}}}
		start := time.Now()
		_, err := newBubbleClient(gw, Config{Timeout: 3 * time.Second}).Push(context.Background(), "T-1", 1)
		elapsed := time.Since(start)

		// With no attempt timeout the one attempt may use the whole budget.
		want := &Error{Kind: KindUnavailable, Reason: "the gateway did not answer in time", Attempts: 1}
		if diff := cmp.Diff(want, asError(t, err), cmpopts.IgnoreFields(Error{}, "Cause")); diff != "" {
			t.Errorf("error mismatch (-want +got):\n%s", diff)
		}
		if elapsed != 3*time.Second {
			t.Errorf("gave up after %v, want the 3s budget", elapsed)
		}
	})
}

// A budget that runs out on an attempt with no answer keeps the gateway's earlier answer in the
// reason: the merchant note and the log say 503, not only that time ran out.
func TestPushTimeoutAfterAnAnswerKeepsTheAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := &recorder{answers: []answer{{status: http.StatusServiceUnavailable}, {hang: true}}}
		_, err := newBubbleClient(gw, Config{Timeout: 3 * time.Second}).Push(context.Background(), "T-1", 1)

		want := &Error{
			Kind:       KindUnavailable,
			Reason:     "gateway answered 503 Service Unavailable, then the gateway did not answer in time",
			Attempts:   2,
			StatusCode: http.StatusServiceUnavailable,
		}
		if diff := cmp.Diff(want, asError(t, err), cmpopts.IgnoreFields(Error{}, "Cause")); diff != "" {
			t.Errorf("error mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestPushAttemptTimeoutRetriesAHangWithinBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := &recorder{answers: []answer{{hang: true}}}
		start := time.Now()
		c := newBubbleClient(gw, Config{Timeout: 3 * time.Second, AttemptTimeout: time.Second})
		_, err := c.Push(context.Background(), "T-1", 1)
		elapsed := time.Since(start)

		// Attempts of 1 s each, 50 ms and 100 ms apart; the third is cut
		// short by the budget.
		want := &Error{Kind: KindUnavailable, Reason: "the gateway did not answer in time", Attempts: 3}
		if diff := cmp.Diff(want, asError(t, err), cmpopts.IgnoreFields(Error{}, "Cause")); diff != "" {
			t.Errorf("error mismatch (-want +got):\n%s", diff)
		}
		ms := time.Millisecond
		if diff := cmp.Diff([]time.Duration{1050 * ms, 1100 * ms}, gaps(gw.received())); diff != "" {
			t.Errorf("gaps mismatch (-want +got):\n%s", diff)
		}
		if elapsed != 3*time.Second {
			t.Errorf("gave up after %v, want the 3s budget", elapsed)
		}
	})
}

func TestPushAttemptTimeoutConfigurable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := &recorder{answers: []answer{{hang: true}, {status: 200}}}
		c := newBubbleClient(gw, Config{Timeout: 10 * time.Second, AttemptTimeout: 500 * time.Millisecond})
		res, err := c.Push(context.Background(), "T-1", 1)
		if err != nil || res.Attempts != 2 {
			t.Errorf("Push = %+v, %v; want success on attempt 2", res, err)
		}
		if got := gaps(gw.received()); len(got) != 1 || got[0] != 550*time.Millisecond {
			t.Errorf("gap = %v, want 500ms timeout + 50ms backoff", got)
		}
	})
}

func TestPushCallerCancelDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := &recorder{answers: []answer{{status: 503, retryAfter: "5"}}}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(time.Second, cancel)
		start := time.Now()
		_, err := newBubbleClient(gw, Config{}).Push(ctx, "T-1", 1)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v, want context.Canceled", err)
		}
		if elapsed := time.Since(start); elapsed != time.Second {
			t.Errorf("returned after %v, want at the cancellation", elapsed)
		}
	})
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := map[string]time.Duration{
		"":                               0,
		"0":                              0,
		"7":                              7 * time.Second,
		" 7 ":                            7 * time.Second,
		"-1":                             0,
		"1.5":                            0,
		"99999999999999999999":           maxRetryAfter,
		"Sun, 01 Mar 2026 12:00:30 GMT":  30 * time.Second,
		"Sunday, 01-Mar-26 12:01:00 GMT": time.Minute,
		"Sun, 01 Mar 2026 11:00:00 GMT":  0,
		"tomorrow":                       0,
	}
	for in, want := range tests {
		if got := retryAfter(in, now); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestCleanText(t *testing.T) {
	tests := map[string]string{
		"  plain  ":                       "plain",
		"line\r\nbreaks\t\tand  runs":     "line breaks and runs",
		"bell\x07 esc\x1b nul\x00":        "bell esc nul",
		"bidi \u202eevil\u202c":           "bidi evil",
		"bad \xff\xfe utf8":               "bad utf8",
		strings.Repeat("a", 199) + " b":   strings.Repeat("a", 199),
		strings.Repeat("a", 198) + " bcd": strings.Repeat("a", 198) + " b",
		strings.Repeat("日本", 150):         strings.Repeat("日本", 100),
		"\u00a0nbsp\u00a0trimmed\u00a0":   "nbsp trimmed",
		"":                                "",
	}
	for in, want := range tests {
		if got := cleanText(in); got != want {
			t.Errorf("cleanText(%q) = %q, want %q", in, got, want)
		}
	}
}
