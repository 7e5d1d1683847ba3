// Package cputime reads the CPU time this process has used, for the benchmarks that report it
// beside the time on the clock. It imports nothing of the module, so every package's tests can use
// it, the dataset's own included (which internal/testdb, importing the dataset, cannot serve).
package cputime
