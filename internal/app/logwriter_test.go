package app

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// Lines from many goroutines all arrive, whole and each goroutine's in order, by Close.
func TestBatchWriterKeepsEveryLine(t *testing.T) {
	var out lockedBuffer
	w := newBatchWriter(&out)
	const writers, lines = 8, 500
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range lines {
				fmt.Fprintf(w, "g%d line %d\n", g, i)
			}
		})
	}
	wg.Wait()
	w.Close()
	next := make([]int, writers)
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for _, l := range got {
		var g, i int
		if _, err := fmt.Sscanf(l, "g%d line %d", &g, &i); err != nil {
			t.Fatalf("torn line %q", l)
		}
		if i != next[g] {
			t.Fatalf("writer %d: line %d after %d", g, i, next[g]-1)
		}
		next[g]++
	}
	if len(got) != writers*lines {
		t.Fatalf("%d lines, want %d", len(got), writers*lines)
	}
}

// A line logged alone goes out without waiting for company or for Close.
func TestBatchWriterWritesALoneLine(t *testing.T) {
	var out lockedBuffer
	w := newBatchWriter(&out)
	defer w.Close()
	w.Write([]byte("alone\n"))
	deadline := time.Now().Add(5 * time.Second)
	for out.String() != "alone\n" {
		if time.Now().After(deadline) {
			t.Fatalf("after 5s the destination holds %q", out.String())
		}
		time.Sleep(time.Millisecond)
	}
}

// Past maxBatch the caller writes the batch itself: what waits stays bounded.
func TestBatchWriterBound(t *testing.T) {
	var out bytes.Buffer
	w := &batchWriter{out: &out, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	// No writer goroutine: only the caller's own flush can move the bytes.
	line := bytes.Repeat([]byte("x"), 1024)
	for range maxBatch/len(line) + 1 {
		w.Write(line)
	}
	if out.Len() < maxBatch || len(w.buf) >= maxBatch {
		t.Fatalf("%d bytes written, %d waiting; want the full batch written by the caller", out.Len(), len(w.buf))
	}
}
