//go:build race

package app

// raceDetector: this test binary runs under the race detector (./test.sh -race), which multiplies
// a process's memory: the tests that hold a child's peak memory to a ceiling only log it then.
const raceDetector = true
