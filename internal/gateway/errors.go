package gateway

import "fmt"

// Kind says which of the two ways a push can fail it was. The service answers
// both with 502, as gateway_unavailable and gateway_rejected.
type Kind int

const (
	// KindUnavailable: the gateway could not be reached, timed out, or kept
	// answering 408, 429 or 5xx until the time budget ran out. Also returned,
	// with Attempts 0, when no usable gateway URL is configured.
	KindUnavailable Kind = iota + 1
	// KindRejected: the gateway refused the push (a 4xx other than 408 and
	// 429, or a redirect). Retrying the same payload will not help.
	KindRejected
)

func (k Kind) String() string {
	switch k {
	case KindUnavailable:
		return "unavailable"
	case KindRejected:
		return "rejected"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Error is a failed push.
type Error struct {
	Kind Kind
	// Reason is safe to show to a back-office user and to store in a
	// merchant note: for KindRejected it is the gateway's own message,
	// cleaned of control characters and cut to 200 characters; for
	// KindUnavailable a short summary of the last failure.
	Reason string
	// Attempts is how many requests were sent.
	Attempts int
	// StatusCode is the gateway's last HTTP status, 0 if it never answered.
	StatusCode int
	// Cause is the last transport error, if any, for logs. It is
	// deliberately not returned by Unwrap: errors.Is(err,
	// context.DeadlineExceeded) must only ever mean the caller's own context
	// ran out, not that the push's budget did.
	Cause error
}

func (e *Error) Error() string {
	switch e.Kind {
	case KindRejected:
		return "gateway rejected the push: " + e.Reason
	case KindUnavailable:
		return fmt.Sprintf("gateway unavailable after %d attempt(s): %s", e.Attempts, e.Reason)
	}
	return "gateway: " + e.Reason
}
