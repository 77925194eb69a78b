package sluice

import "time"

// Clock tells in-process stores the time, so tests can step time instead of
// sleeping. The Redis store does not use it: it reads the Redis server's
// clock so that clock skew between application nodes cannot change a limit.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
}

// ClockFunc adapts a function to the [Clock] interface.
type ClockFunc func() time.Time

// Now returns f().
func (f ClockFunc) Now() time.Time { return f() }

// SystemClock is the wall clock, [time.Now].
var SystemClock Clock = ClockFunc(time.Now)
