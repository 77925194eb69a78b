package storetest

import (
	"sync"
	"time"
)

// Clock is a manual clock for tests: it stands still until Set or Advance
// moves it. The zero value reads as the zero time. It is safe for
// concurrent use and implements [sluice.Clock].
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock reading t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t, which may be in the past.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// Advance moves the clock forward by d and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// Timer moves the clock forward by d and returns a channel that has
// already received, and a stop function: a timer on which a wait takes no
// real time. With Now, it makes the clock a [sluice.WaitClock]: pass the
// clock to [sluice.WithWaitClock].
func (c *Clock) Timer(d time.Duration) (<-chan time.Time, func() bool) {
	ch := make(chan time.Time, 1)
	ch <- c.Advance(d)
	return ch, func() bool { return false }
}
