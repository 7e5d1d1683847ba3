package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// maxBody is how much of any gateway answer is read: the gateway is a remote
// party, and nothing we need from it is longer.
const maxBody = 64 << 10

// maxReason is the longest reason (and push id) kept from a gateway answer.
const maxReason = 200

// readBody reads at most maxBody bytes. What is left unread is dropped with
// the connection when the body is closed: draining it could take forever.
// A read error keeps what arrived before it; callers treat a short body like
// any other body they cannot make sense of.
func readBody(r io.Reader) []byte {
	body, _ := io.ReadAll(io.LimitReader(r, maxBody))
	return body
}

// classify turns one gateway answer into a push id, a *retryable or an *Error.
func classify(resp *http.Response, body []byte, now time.Time) (string, error) {
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return pushID(body), nil
	case code >= 300 && code < 400:
		return "", &Error{
			Kind:       KindRejected,
			Reason:     fmt.Sprintf("gateway answered a redirect (%d)", code),
			StatusCode: code,
		}
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests, code >= 500:
		return "", &retryable{
			reason: fmt.Sprintf("gateway answered %d %s", code, http.StatusText(code)),
			status: code,
			after:  retryAfter(resp.Header.Get("Retry-After"), now),
		}
	}
	return "", &Error{Kind: KindRejected, Reason: rejectionReason(code, body), StatusCode: code}
}

// pushID is the "pushId" of a JSON answer, or "" when there is none: the push
// has been accepted either way, and the id only goes into a note.
func pushID(body []byte) string {
	var answer struct {
		PushID string `json:"pushId"`
	}
	if json.Unmarshal(body, &answer) != nil {
		return ""
	}
	return cleanText(answer.PushID)
}

// rejectionReason is the gateway's JSON "message", else its text, else the
// status line.
func rejectionReason(code int, body []byte) string {
	var answer struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &answer) == nil {
		if reason := cleanText(answer.Message); reason != "" {
			return reason
		}
	}
	if reason := cleanText(string(body)); reason != "" {
		return reason
	}
	return fmt.Sprintf("gateway answered %d %s", code, http.StatusText(code))
}

// cleanText makes text from the gateway safe to show and store: valid UTF-8,
// every run of white space (newlines included) one space, other control and
// format characters (such as bidirectional overrides) dropped, trimmed, and
// cut to maxReason characters.
func cleanText(s string) string {
	var b strings.Builder
	n, lastSpace := 0, false
	for len(s) > 0 && n < maxReason {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		switch {
		case r == utf8.RuneError && size <= 1:
			continue
		case unicode.IsSpace(r):
			if n == 0 || lastSpace {
				continue
			}
			r = ' '
		case !unicode.IsPrint(r):
			continue
		}
		lastSpace = r == ' '
		b.WriteRune(r)
		n++
	}
	return strings.TrimRight(b.String(), " ")
}

// maxRetryAfter keeps a huge Retry-After from overflowing a Duration; any
// value this large is beyond every budget anyway.
const maxRetryAfter = 24 * time.Hour

// retryAfter parses a Retry-After value, delta-seconds or an HTTP date. An
// absent, malformed or past value is 0, which leaves the backoff delay as it is.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	// A number too large for uint64 still means "not within any budget".
	if secs, err := strconv.ParseUint(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if secs > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		return time.Duration(secs) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil {
		return min(max(at.Sub(now), 0), maxRetryAfter)
	}
	return 0
}
