package store

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// firstReadHeld answers its nth read with n; the first read is held until the test releases it.
type firstReadHeld struct {
	reads   atomic.Int64
	entered chan struct{}
	release chan struct{}
}

func (b *firstReadHeld) Version(context.Context) (int64, error) {
	n := b.reads.Add(1)
	if n == 1 {
		close(b.entered)
		<-b.release
	}
	return n, nil
}

// A read that has begun is no check for a caller who asks after it began: that caller may have
// arrived after a commit the read no longer sees. It gets a read of its own, begun after it asked.
func TestCheckRoundsNeverShareAReadThatHasBegun(t *testing.T) {
	b := &firstReadHeld{entered: make(chan struct{}), release: make(chan struct{})}
	c := newCheckRounds(b)
	first := make(chan int64, 1)
	go func() {
		v, _ := c.Version(context.Background())
		first <- v
	}()
	<-b.entered // the first round's read has begun, and is held
	second := make(chan int64, 1)
	go func() {
		v, _ := c.Version(context.Background())
		second <- v
	}()
	select {
	case v := <-second:
		if v != 2 {
			t.Errorf("the caller who asked after the first read began got %d, want 2 (a read begun after it asked)", v)
		}
	case <-time.After(10 * time.Second):
		t.Error("the caller who asked after the first read began waits for that read: it would share a check begun before it asked")
	}
	close(b.release)
	if v := <-first; v != 1 {
		t.Errorf("the first caller got %d, want 1", v)
	}
}

// countingVersion counts its reads.
type countingVersion struct{ reads atomic.Int64 }

func (c *countingVersion) Version(context.Context) (int64, error) { return c.reads.Add(1), nil }

// readyTogether runs fn on n goroutines made ready to run at the same moment, and waits for them.
func readyTogether(n int, fn func()) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			<-start
			fn()
		})
	}
	close(start)
	wg.Wait()
}

// Callers ready to run together share one read: the first yields to the others before it reads.
func TestCheckRoundsShareOneReadAmongWaitingCallers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one core, as the service is measured
	counter := &countingVersion{}
	c := newCheckRounds(counter)
	const callers = 16
	readyTogether(callers, func() {
		if _, err := c.Version(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if n := counter.reads.Load(); n >= callers {
		t.Errorf("%d callers ready together made %d reads; want them to share", callers, n)
	}
}

// A caller whose round's opener gave up (its request was cancelled) reads for itself.
func TestCheckRoundsOutliveTheOpenersCancellation(t *testing.T) {
	c := newCheckRounds(versionFunc(func(ctx context.Context) (int64, error) { return 7, ctx.Err() }))
	r := &checkRound{done: make(chan struct{})}
	c.open = r
	r.err = context.Canceled
	close(r.done)
	if v, err := c.Version(context.Background()); err != nil || v != 7 {
		t.Errorf("got %d, %v; want the caller's own read (7)", v, err)
	}
}

type versionFunc func(context.Context) (int64, error)

func (f versionFunc) Version(ctx context.Context) (int64, error) { return f(ctx) }
