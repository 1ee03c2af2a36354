//go:build race

package web

// raceDetector reports whether the tests run under the race detector.
const raceDetector = true
