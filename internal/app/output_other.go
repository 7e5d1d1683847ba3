//go:build !linux

package app

// createOutput makes the output in dir under a temporary name (namedOutput): only Linux gives a
// file no name until it is linked.
func createOutput(dir string) (*outputFile, error) { return namedOutput(dir) }
