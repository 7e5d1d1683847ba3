package pause_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"backoffice/internal/pause"
)

// A pause lasts its whole duration, unless its context ends first: then it ends at once with the
// context's error.
func TestFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := pause.For(context.Background(), time.Second); err != nil || time.Since(start) != time.Second {
			t.Fatalf("pause: %v after %v, want nil after 1s", err, time.Since(start))
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel)
		start = time.Now()
		if err := pause.For(ctx, time.Second); !errors.Is(err, context.Canceled) || time.Since(start) != 300*time.Millisecond {
			t.Fatalf("canceled pause: %v after %v, want context.Canceled after 300ms", err, time.Since(start))
		}
		if err := pause.For(ctx, time.Second); !errors.Is(err, context.Canceled) || time.Since(start) != 300*time.Millisecond {
			t.Fatalf("pause of an ended context: %v after %v, want context.Canceled at once", err, time.Since(start))
		}
	})
}
