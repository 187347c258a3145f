//go:build race

package agent

// raceDetector is true when the tests run under the race detector.
const raceDetector = true
