package app

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"backoffice/internal/dataset"
)

// importProgress shows a long import's progress on standard error when that is a terminal: the
// file read (bytes), then the records written, each with its rate and the time left, redrawn in
// place twice a second. Anywhere else it shows nothing: only the summary line is printed.
type importProgress struct {
	w     io.Writer
	start time.Time
	// phase names what done and total count, "MB read" or "records"; total is 0 when unknown.
	mu           sync.Mutex
	phase, after string // after: what goes on once all of the phase is done
	phaseStart   time.Time
	done         atomic.Int64
	total, scale int64
	stop         chan struct{}
	stopped      sync.WaitGroup
}

// progressInterval is how often the line is redrawn.
const progressInterval = 500 * time.Millisecond

// startProgress starts the redrawing when w is a terminal; otherwise it returns a progress that
// only counts.
func startProgress(w io.Writer) *importProgress {
	p := &importProgress{start: time.Now()}
	if !isTerminal(w) {
		return p
	}
	p.w, p.stop = w, make(chan struct{})
	p.stopped.Add(1)
	go p.draw()
	return p
}

// isTerminal reports whether w is a character device (a terminal), not a file or a pipe.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// setPhase starts counting something else: total of it (0: unknown), shown divided by scale;
// after says what goes on once all of it is done.
func (p *importProgress) setPhase(phase string, total, scale int64, after string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phase, p.after, p.total, p.scale, p.phaseStart = phase, after, total, scale, time.Now()
	p.done.Store(0)
}

func (p *importProgress) add(n int64) { p.done.Add(n) }
func (p *importProgress) set(n int64) { p.done.Store(n) }

func (p *importProgress) draw() {
	defer p.stopped.Done()
	t := time.NewTicker(progressInterval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			fmt.Fprint(p.w, "\r\033[K") // the summary takes the line's place
			return
		case <-t.C:
			fmt.Fprint(p.w, "\r\033[K"+p.line(time.Now()))
		}
	}
}

// line is the progress line at now: what is done, of how much, at what rate, and the time left.
func (p *importProgress) line(now time.Time) string {
	p.mu.Lock()
	phase, after, total, scale, since := p.phase, p.after, p.total, p.scale, p.phaseStart
	p.mu.Unlock()
	done := p.done.Load()
	elapsed := now.Sub(since).Seconds()
	if total > 0 && done >= total {
		// All of it is in: what is left has no count (checking the file, the commit).
		return fmt.Sprintf("import: %d %s, %s, %s", total/scale, phase, after, now.Sub(since).Round(time.Second))
	}
	s := fmt.Sprintf("import: %d", done/scale)
	if total > 0 {
		s += fmt.Sprintf(" of %d", total/scale)
	}
	s += " " + phase
	if elapsed > 0 && done > 0 {
		rate := float64(done) / elapsed
		s += fmt.Sprintf(", %.0f/s", rate/float64(scale))
		if total > done {
			left := time.Duration(float64(total-done) / rate * float64(time.Second))
			s += fmt.Sprintf(", %s left", left.Round(time.Second))
		}
	}
	return s
}

// end stops the redrawing and clears the line.
func (p *importProgress) end() {
	if p.stop != nil {
		close(p.stop)
		p.stopped.Wait()
	}
}

// summary is the line that ends an import, whatever standard error is.
func importSummary(name string, c dataset.Counts, took time.Duration) string {
	return fmt.Sprintf("imported %d records from %s: %d added, %d replaced, %d deleted, in %s\n",
		c.Added+c.Replaced, name, c.Added, c.Replaced, c.Deleted, took.Round(time.Millisecond))
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	p *importProgress
}

func (c countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.p.add(int64(n))
	return n, err
}
