//go:build !unix

package store_test

import "time"

// processCPU is -1: not measured here.
func processCPU() time.Duration { return -1 }
