//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Process is the CPU time this process has used, user and system, every goroutine's (the
// audit writer's and the collector's work count too), or -1 where it cannot be read. A
// benchmark reports it beside ns/op: on a machine shared with other work it moves less than the
// wall clock, which also counts the time the benchmark waited for a core.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
