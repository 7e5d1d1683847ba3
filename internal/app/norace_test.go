//go:build !race

package app

// raceDetector: see race_test.go.
const raceDetector = false
