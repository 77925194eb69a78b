package sluice

import "time"

// Clock tells in-process stores the time, so tests can step time instead of
// sleeping. The Redis store does not use it: it reads the Redis server's
// clock so that clock skew between application nodes cannot change a limit.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
}

// SystemClock is the wall clock, [time.Now].
var SystemClock Clock = systemClock{}

// systemClock is the type of SystemClock.
type systemClock struct{}

// Now returns time.Now().
func (systemClock) Now() time.Time { return time.Now() }
