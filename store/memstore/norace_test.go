//go:build !race

package memstore_test

// raceEnabled reports whether the race detector is on (see race_test.go).
const raceEnabled = false
