//go:build !linux

package app

import "errors"

// createOutput makes the output in dir under a temporary name (namedOutput): only Linux gives a
// file no name until it is linked.
func createOutput(dir string) (*outputFile, error) { return namedOutput(dir) }

// publishUnnamed is Linux's: no file is unnamed elsewhere.
func (o *outputFile) publishUnnamed(string) error {
	return errors.New("an unnamed file is Linux's")
}
