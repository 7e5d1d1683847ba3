//go:build !unix

package testdb

import "time"

// ProcessCPU is -1: not measured here.
func ProcessCPU() time.Duration { return -1 }
