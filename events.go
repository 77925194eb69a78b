package sluice

import (
	"context"
	"time"
)

// StoreCall reports one store call a limiter made for one request (or one
// after-the-fact charge).
type StoreCall struct {
	// Latency is how long the call took.
	Latency time.Duration
	// Hits is how many hits the call decided.
	Hits int
	// Err is the call's error, or nil. Classify it with errors.Is against
	// ErrTimeout, ErrUnavailable, ErrBreakerOpen and the other sentinels.
	Err error
}

// StoreCallObserver is an optional interface of an [Observer]: the
// middleware reports each store call to an observer that implements it,
// once per call (not once per rule, as Observe is). ctx is the request's
// context, as for Observe (for an after-the-fact charge, the request's
// context without its cancellation): not the store call's, which has its
// own deadline and is over by then.
type StoreCallObserver interface {
	// ObserveStoreCall receives one store call of a request.
	ObserveStoreCall(ctx context.Context, c StoreCall)
}

// BreakerState is the state of a circuit breaker.
type BreakerState uint8

const (
	// BreakerClosed: calls go through.
	BreakerClosed BreakerState = iota
	// BreakerOpen: calls fail at once with ErrBreakerOpen, sending nothing.
	BreakerOpen
	// BreakerHalfOpen: one probe call goes through; its outcome closes or
	// re-opens the breaker.
	BreakerHalfOpen
)

var breakerStateNames = [...]string{"closed", "open", "half_open"}

// String returns "closed", "open" or "half_open".
func (s BreakerState) String() string {
	if int(s) < len(breakerStateNames) {
		return breakerStateNames[s]
	}
	return "unknown"
}

// StoreEvents receives what a store reports about itself. A store that
// has such events (the Redis store) accepts one in its configuration. The
// metrics package implements it. Implementations must be safe for
// concurrent use and must not block.
type StoreEvents interface {
	// BreakerChanged reports that the circuit breaker of endpoint (such as
	// "127.0.0.1:6379") moved from one state to another.
	BreakerChanged(endpoint string, from, to BreakerState)
	// ScriptReloaded reports that endpoint had lost the store's script
	// (a restart, a failover, SCRIPT FLUSH) and it was sent again.
	ScriptReloaded(endpoint string)
}

// BreakerStartedEvents is an optional interface of [StoreEvents]: a store
// reports to it each circuit breaker it starts, closed, before any call
// goes through it (the Redis store: its endpoint's when it is created; on
// Cluster each master's, and with Sentinel each primary's, when first
// called), so that a breaker's state is known from the start, not from its
// first transition. The metrics package implements it.
type BreakerStartedEvents interface {
	// BreakerStarted reports that the circuit breaker of endpoint started,
	// closed.
	BreakerStarted(endpoint string)
}

// StateHealedEvents is an optional interface of [StoreEvents]: a store
// reports to it each bucket it found holding something that is not a
// bucket's state (a key of another type, a value that does not parse) and
// replaced with an empty bucket. The metrics package implements it.
type StateHealedEvents interface {
	// StateHealed reports one bucket of endpoint replaced.
	StateHealed(endpoint string)
}

// EvictionPolicyEvents is an optional interface of [StoreEvents]: a store
// whose server can evict keys under memory pressure reports, at start and
// then periodically, whether each endpoint's eviction policy can evict its
// buckets (an evicted bucket forgets what it consumed). The metrics package
// implements it as a gauge.
type EvictionPolicyEvents interface {
	// EvictionPolicyChecked reports endpoint's policy (such as
	// "noeviction" or "allkeys-lru") and whether, with the server's memory
	// limit, it can evict the store's keys. policy is empty, and evicting
	// false, when the server refused to tell (managed services often
	// forbid CONFIG).
	EvictionPolicyChecked(endpoint, policy string, evicting bool)
}

// ResetObserver is an optional interface of an [Observer]: operator
// controls (such as the rules/admin handler) report to an observer that
// implements it each bucket they reset, by rule name (never the identity).
// The metrics package counts them.
type ResetObserver interface {
	// ObserveReset receives one bucket of rule that was reset.
	ObserveReset(ctx context.Context, rule string)
}
