//go:build race

package middleware_test

// raceEnabled reports whether the race detector is on: it makes a flood
// offer far fewer requests, so figures per offered request mean less.
const raceEnabled = true
