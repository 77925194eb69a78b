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
// request, not a corrupt key, not a command the Redis user may not run).
// While open it sends no command at all: calls
// fail at once with [sluice.ErrBreakerOpen], carrying the remaining open
// time as their RetryAfter. After OpenFor the store probes the endpoint in
// the background (half-open): it PINGs it on a ready connection, within
// ProbeTimeout. Success closes the breaker, failure opens it for
// another OpenFor. No request ever waits for the probe or runs it: until
// the probe succeeds, requests keep failing at once.
//
// Connections are set up in the background too (see the package
// documentation), so after Redis comes back, decisions resume within
// OpenFor plus the time to set up a connection and the probe's round trip.
type BreakerConfig struct {
	// Failures is how many consecutive failures open the breaker.
	// Default: 5.
	Failures int
	// OpenFor is how long the breaker stays open before it probes.
	// Default: 500 ms.
	OpenFor time.Duration
	// ProbeTimeout bounds the background probe: it should be the budget
	// requests give the store, so that a Redis answering slower than that
	// keeps the breaker open. Default: 50 ms, the middleware's default
	// budget.
	ProbeTimeout time.Duration
	// Disabled turns the breaker off: every call goes to Redis.
	Disabled bool
	// Clock tells the breaker the time. Default: the system clock. Tests
	// step a fake clock.
	Clock sluice.Clock
}

const (
	defaultBreakerFailures = 5
	defaultBreakerOpenFor  = 500 * time.Millisecond
	defaultProbeTimeout    = 50 * time.Millisecond
)

// breaker is one endpoint's circuit breaker. It is safe for concurrent use.
type breaker struct {
	endpoint string
	failures int
	openFor  time.Duration
	probeFor time.Duration // the probe's timeout
	clock    sluice.Clock
	events   sluice.StoreEvents

	// A closed breaker's calls read state and failed without the mutex,
	// which guards every change.
	mu        sync.Mutex
	state     atomic.Int32 // a sluice.BreakerState
	failed    atomic.Int64 // consecutive failures while closed
	openUntil time.Time    // while open
	probing   bool         // while half-open: the probe is out
	probedAt  time.Time    // when a request took the probe
	// background: the store probes the endpoint itself (probeDue) and
	// requests never do; opened receives when the breaker opens.
	background bool
	opened     chan struct{}
	// lastOK is when the latest call Redis answered was sent, in
	// nanoseconds since answerEpoch (see answered).
	lastOK atomic.Int64
}

// answerEpoch is the origin of breakers' lastOK, on the monotonic clock.
var answerEpoch = time.Now()

// answered notes that Redis answered a call sent at start.
func (b *breaker) answered(start time.Time) {
	at := int64(start.Sub(answerEpoch))
	if at > b.lastOK.Load()+int64(time.Millisecond) { // written at most once a millisecond
		b.lastOK.Store(at)
	}
}

// answeredSince reports whether Redis answered a call sent after start:
// it was answering while a call sent at start was out, so that call's
// timeout, found late, is the process's lateness, which the breaker does
// not count. While Redis answers nothing (slow, or gone), every timeout
// counts.
func (b *breaker) answeredSince(start time.Time) bool {
	return b.lastOK.Load() > int64(start.Sub(answerEpoch))
}

// newBreaker returns endpoint's breaker, closed, and reports it started
// to events ([sluice.BreakerStartedEvents]); nil when breakers are
// disabled.
func newBreaker(endpoint string, cfg BreakerConfig, events sluice.StoreEvents) *breaker {
	if cfg.Disabled {
		return nil
	}
	b := &breaker{endpoint: endpoint, failures: cfg.Failures, openFor: cfg.OpenFor, clock: cfg.Clock, events: events,
		opened: make(chan struct{}, 1)}
	if b.failures <= 0 {
		b.failures = defaultBreakerFailures
	}
	if b.openFor <= 0 {
		b.openFor = defaultBreakerOpenFor
	}
	b.probeFor = cfg.ProbeTimeout
	if b.probeFor <= 0 {
		b.probeFor = defaultProbeTimeout
	}
	if b.clock == nil {
		b.clock = sluice.SystemClock
	}
	if e, ok := events.(sluice.BreakerStartedEvents); ok {
		e.BreakerStarted(endpoint)
	}
	return b
}

// allow reports whether a call may go to Redis. When it may not, retry is
// how long the breaker expects to stay open. A breaker probed in the
// background (see probeDue) never lets a request through while it is not
// closed: requests never probe. Otherwise probe is true for the one call a
// half-open breaker lets through; its outcome must be recorded.
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
		if left := b.openUntil.Sub(now); left > 0 {
			return false, false, left
		}
		if b.background {
			return false, false, b.openFor // the probe is due
		}
		b.move(sluice.BreakerHalfOpen)
		b.probing, b.probedAt = true, now
		return true, true, 0
	default: // half-open: one probe at a time
		// A request's probe whose outcome was never recorded (its call
		// failed before it was sent, in a way that says nothing about
		// Redis) is given up after OpenFor: another request probes.
		now := b.clock.Now()
		if b.background || b.probing && now.Sub(b.probedAt) < b.openFor {
			return false, false, b.openFor
		}
		b.probing, b.probedAt = true, now
		return true, true, 0
	}
}

// record reports the outcome of a call allow let through. A failure counts
// towards opening; an answer from Redis (a result, or an error reply such
// as a key of the wrong type) resets the count; a call its caller
// cancelled says nothing about Redis. A call that ends after the breaker
// opened changes nothing: only the probe closes it.
func (b *breaker) record(probe bool, err error) {
	if err == nil && !probe && b.failed.Load() == 0 {
		return // the common case: nothing to change
	}
	failed := countsAsFailure(err)
	if probe {
		if !failed && errors.Is(err, context.Canceled) {
			b.mu.Lock()
			b.probing = false // let another call probe
			b.mu.Unlock()
			return
		}
		b.probed(err)
		return
	}
	if !failed && errors.Is(err, context.Canceled) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.State() != sluice.BreakerClosed:
	case failed:
		if b.failed.Add(1) >= int64(b.failures) {
			b.open()
		}
	default:
		b.failed.Store(0)
	}
}

// probeDue reports whether the probe should run now; if so the breaker is
// half-open until probed reports its outcome. Otherwise wait is how long
// until it is due (0 when the breaker is closed or a probe is out).
func (b *breaker) probeDue() (due bool, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.State() == sluice.BreakerClosed || b.probing {
		return false, 0
	}
	if left := b.openUntil.Sub(b.clock.Now()); left > 0 {
		return false, left
	}
	b.probing = true
	b.move(sluice.BreakerHalfOpen)
	return true, 0
}

// probed reports the outcome of the probe: success closes the breaker,
// failure opens it for another OpenFor.
func (b *breaker) probed(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probing = false
	if countsAsFailure(err) || err != nil && b.background {
		b.open()
		return
	}
	b.failed.Store(0)
	b.move(sluice.BreakerClosed)
}

func (b *breaker) open() {
	b.openUntil = b.clock.Now().Add(b.openFor)
	b.failed.Store(0)
	b.move(sluice.BreakerOpen)
	select {
	case b.opened <- struct{}{}:
	default: // already signalled
	}
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
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, ErrUnsupportedClient) || errors.Is(err, ErrNoPermission) {
		return false // configuration errors: CROSSSLOT, an ACL
	}
	return errors.Is(err, sluice.ErrUnavailable) || errors.Is(err, sluice.ErrTimeout) || errors.Is(err, sluice.ErrClusterDown)
}

// breakers holds a circuit breaker per endpoint address, made on first
// use: a cluster's masters', a Sentinel-managed primary's successive
// ones. It is safe for concurrent use.
type breakers struct {
	cfg    BreakerConfig
	events sluice.StoreEvents
	mu     sync.Mutex // held while an endpoint's breaker is made, so it is made (and reported) once
	m      sync.Map   // address → *breaker
}

func newBreakers(cfg BreakerConfig, events sluice.StoreEvents) *breakers {
	return &breakers{cfg: cfg, events: events}
}

// get returns addr's breaker, or nil when breakers are disabled.
func (bs *breakers) get(addr string) *breaker {
	if bs.cfg.Disabled {
		return nil
	}
	if b, ok := bs.m.Load(addr); ok {
		return b.(*breaker)
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if b, ok := bs.m.Load(addr); ok {
		return b.(*breaker)
	}
	b := newBreaker(addr, bs.cfg, bs.events)
	bs.m.Store(addr, b)
	return b
}

// state returns the least healthy state of the breakers: open if any is
// open.
func (bs *breakers) state() sluice.BreakerState {
	worst := sluice.BreakerClosed
	bs.m.Range(func(_, b any) bool {
		switch b.(*breaker).State() {
		case sluice.BreakerOpen:
			worst = sluice.BreakerOpen
			return false
		case sluice.BreakerHalfOpen:
			worst = sluice.BreakerHalfOpen
		}
		return true
	})
	return worst
}
