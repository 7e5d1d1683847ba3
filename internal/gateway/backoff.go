package gateway

import (
	"context"
	"time"
)

const (
	firstDelayCap = 100 * time.Millisecond
	maxDelay      = time.Second
)

// backoff yields exponential delays with full jitter: each delay is uniformly
// random below a cap that starts at 100 ms and doubles up to 1 s. Full jitter
// spreads the retries of many terminals pushed at once, after a gateway
// outage, instead of bunching them into waves.
type backoff struct {
	rand    func() float64
	ceiling time.Duration
}

func (b *backoff) next() time.Duration {
	if b.ceiling == 0 {
		b.ceiling = firstDelayCap
	} else {
		b.ceiling = min(2*b.ceiling, maxDelay)
	}
	f := min(max(b.rand(), 0), 1)
	return time.Duration(f * float64(b.ceiling))
}

// fitsBudget reports whether waiting d still leaves time before ctx's
// deadline. When it does not, giving up now is better than sleeping into a
// failure that is already certain.
func fitsBudget(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return !ok || time.Until(deadline) > d
}
