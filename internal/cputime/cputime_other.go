//go:build !unix

package cputime

import "time"

// Process is -1: not measured here.
func Process() time.Duration { return -1 }
