//go:build race

package memstore_test

// raceEnabled reports whether the race detector is on: it makes the store
// about thirty times slower, so the longest tests send less.
const raceEnabled = true
