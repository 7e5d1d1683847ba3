package app

import (
	"io"
	"sync"
)

// batchWriter passes log lines on to out in batches: a line is handed to a writer goroutine
// that writes everything logged since its last write in one call. Alone, a line goes out at
// once, as before; under load, many requests' access-log lines share one write(2) instead of
// paying one each (about a twentieth of a request's CPU). Close writes what is left, so an
// orderly stop loses nothing; a crash loses at most the lines of the write in progress.
type batchWriter struct {
	out io.Writer
	// outMu is held across taking a batch and writing it, so batches go out in order.
	outMu sync.Mutex
	mu    sync.Mutex
	buf   []byte
	spare []byte
	wake  chan struct{}
	quit  chan struct{}
	done  chan struct{}
}

// maxBatch is how much may wait: past it the logging caller writes the batch itself, so a slow
// destination slows the callers down instead of growing memory.
const maxBatch = 1 << 20

func newBatchWriter(out io.Writer) *batchWriter {
	w := &batchWriter{out: out, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// Write keeps p (one log record: slog writes each record in one call) for the next batch.
func (w *batchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf = append(w.buf, p...)
	full := len(w.buf) >= maxBatch
	w.mu.Unlock()
	if full {
		w.flush()
		return len(p), nil
	}
	select {
	case w.wake <- struct{}{}:
	default: // a wake-up is already pending; it will take this line too
	}
	return len(p), nil
}

func (w *batchWriter) run() {
	defer close(w.done)
	for {
		select {
		case <-w.wake:
			w.flush()
		case <-w.quit:
			w.flush()
			return
		}
	}
}

// flush writes what is waiting. A failed write drops its batch: there is nowhere left to
// report that logging failed, and the service must not stop serving because of it.
func (w *batchWriter) flush() {
	w.outMu.Lock()
	defer w.outMu.Unlock()
	w.mu.Lock()
	batch := w.buf
	w.buf, w.spare = w.spare[:0], nil
	w.mu.Unlock()
	if len(batch) > 0 {
		_, _ = w.out.Write(batch)
	}
	w.mu.Lock()
	if w.spare == nil && cap(batch) <= maxBatch {
		w.spare = batch[:0]
	}
	w.mu.Unlock()
}

// Close writes the lines still waiting and stops the writer goroutine.
func (w *batchWriter) Close() error {
	close(w.quit)
	<-w.done
	return nil
}
