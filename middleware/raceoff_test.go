//go:build !race

package middleware_test

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
