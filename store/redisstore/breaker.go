package redisstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
)

// BreakerConfig configures the circuit breaker the store keeps per Redis
// endpoint. The zero value is the documented default.
//
// The breaker opens after Failures consecutive failed calls (timeouts,
// refused or reset connections, CLUSTERDOWN; not a caller cancelling its
// request, not a corrupt key). While open it sends no command at all: calls
// fail at once with [sluice.ErrBreakerOpen], carrying the remaining open
// time as their RetryAfter. After OpenFor it lets one probe call through
// (half-open): success closes it, failure opens it again.
//
// go-redis has its own dial breaker: after PoolSize consecutive dial errors
// its pool fails fast and redials in the background once a second. So after
// Redis comes back, the first probe that finds the pool healthy succeeds:
// recovery takes at most OpenFor plus about one second.
type BreakerConfig struct {
	// Failures is how many consecutive failures open the breaker.
	// Default: 5.
	Failures int
	// OpenFor is how long the breaker stays open before it probes.
	// Default: 500 ms.
	OpenFor time.Duration
	// Disabled turns the breaker off: every call goes to Redis.
	Disabled bool
	// Clock tells the breaker the time. Default: the system clock. Tests
	// step a fake clock.
	Clock sluice.Clock
}

const (
	defaultBreakerFailures = 5
	defaultBreakerOpenFor  = 500 * time.Millisecond
)

// breaker is one endpoint's circuit breaker. It is safe for concurrent use.
type breaker struct {
	endpoint string
	failures int
	openFor  time.Duration
	clock    sluice.Clock
	events   sluice.StoreEvents

	// A closed breaker's calls read state and failed without the mutex,
	// which guards every change.
	mu        sync.Mutex
	state     atomic.Int32 // a sluice.BreakerState
	failed    atomic.Int64 // consecutive failures while closed
	openUntil time.Time    // while open
	probing   bool         // while half-open: the probe is out
}

func newBreaker(endpoint string, cfg BreakerConfig, events sluice.StoreEvents) *breaker {
	if cfg.Disabled {
		return nil
	}
	b := &breaker{endpoint: endpoint, failures: cfg.Failures, openFor: cfg.OpenFor, clock: cfg.Clock, events: events}
	if b.failures <= 0 {
		b.failures = defaultBreakerFailures
	}
	if b.openFor <= 0 {
		b.openFor = defaultBreakerOpenFor
	}
	if b.clock == nil {
		b.clock = sluice.SystemClock
	}
	return b
}

// allow reports whether a call may go to Redis. probe is true for the one
// call a half-open breaker lets through; its outcome must be recorded.
// When the call may not go, retry is how long the breaker expects to stay
// open.
func (b *breaker) allow() (ok, probe bool, retry time.Duration) {
	if b.State() == sluice.BreakerClosed {
		return true, false, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.State() {
	case sluice.BreakerClosed:
		return true, false, 0
	case sluice.BreakerOpen:
		now := b.clock.Now()
		if now.Before(b.openUntil) {
			return false, false, b.openUntil.Sub(now)
		}
		b.move(sluice.BreakerHalfOpen)
		b.probing = true
		return true, true, 0
	default: // half-open: one probe at a time
		if b.probing {
			return false, false, b.openFor
		}
		b.probing = true
		return true, true, 0
	}
}

// record reports the outcome of a call allow let through. A failure counts
// towards opening; an answer from Redis (a result, or an error reply such
// as a key of the wrong type) resets the count; a call its caller
// cancelled says nothing about Redis.
func (b *breaker) record(probe bool, err error) {
	if err == nil && !probe && b.failed.Load() == 0 {
		return // the common case: nothing to change
	}
	failed := countsAsFailure(err)
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case !failed && errors.Is(err, context.Canceled):
		if probe {
			b.probing = false // let another call probe
		}
	case probe:
		b.probing = false
		if failed {
			b.open()
		} else {
			b.failed.Store(0)
			b.move(sluice.BreakerClosed)
		}
	case b.State() != sluice.BreakerClosed:
		// A call that started before the breaker opened: only the probe
		// decides when it closes.
	case failed:
		if b.failed.Add(1) >= int64(b.failures) {
			b.open()
		}
	default:
		b.failed.Store(0)
	}
}

func (b *breaker) open() {
	b.openUntil = b.clock.Now().Add(b.openFor)
	b.failed.Store(0)
	b.move(sluice.BreakerOpen)
}

func (b *breaker) move(to sluice.BreakerState) {
	from := b.State()
	b.state.Store(int32(to))
	if from != to && b.events != nil {
		b.events.BreakerChanged(b.endpoint, from, to)
	}
}

// State returns the breaker's state.
func (b *breaker) State() sluice.BreakerState { return sluice.BreakerState(b.state.Load()) }

// countsAsFailure reports whether err says Redis is unwell: not a caller
// that gave up on its own, not a key that holds something else.
func countsAsFailure(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, ErrUnsupportedClient) {
		return false // ErrUnsupportedClient: a configuration error (CROSSSLOT)
	}
	return errors.Is(err, sluice.ErrUnavailable) || errors.Is(err, sluice.ErrTimeout) || errors.Is(err, sluice.ErrClusterDown)
}
