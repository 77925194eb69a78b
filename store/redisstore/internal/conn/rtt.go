package conn

import (
	"sync/atomic"
	"time"
)

// RTT estimates how long a successful command's round trip takes:
// an exponentially weighted moving average giving each new sample a weight
// of 1/8, as TCP's smoothed round-trip time does (RFC 6298). It is safe
// for concurrent use; the zero value has no estimate.
//
// Commands that failed are not sampled: a Redis that times out must reach
// the breaker, not turn callers away before they are sent.
type RTT struct{ ns atomic.Int64 }

// Get returns the estimate, 0 until a sample was taken.
func (e *RTT) Get() time.Duration { return time.Duration(e.ns.Load()) }

// Observe folds the round trip d into the estimate. From zero it climbs
// over some samples, erring towards sending; one slow command moves it by
// an eighth, and later ones bring it back.
func (e *RTT) Observe(d time.Duration) {
	for {
		old := e.ns.Load()
		if e.ns.CompareAndSwap(old, old+(int64(max(d, 0))-old)/8) {
			return
		}
	}
}

// seed sets the estimate to d if it has none: a connection's set-up times
// a round trip before any command has.
func (e *RTT) seed(d time.Duration) {
	e.ns.CompareAndSwap(0, int64(max(d, 1)))
}
