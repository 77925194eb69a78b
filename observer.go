package sluice

import (
	"context"
	"time"
)

// Outcome says how a rule took part in a request's decision.
type Outcome uint8

const (
	// OutcomeAllowed: the rule was decided by the store and passed.
	OutcomeAllowed Outcome = iota
	// OutcomeDenied: an enforcing rule was decided by the store and did not
	// pass; the request was refused.
	OutcomeDenied
	// OutcomeShadowDenied: a shadow (dry-run) rule would have refused the
	// request; it was let through.
	OutcomeShadowDenied
	// OutcomeFailedOpen: the store failed and the rule's policy let the
	// request through.
	OutcomeFailedOpen
	// OutcomeFailedClosed: the store failed and the rule's policy refused
	// the request.
	OutcomeFailedClosed
	// OutcomeLocal: the store failed and the rule was decided by an
	// in-process fallback bucket.
	OutcomeLocal
	// OutcomeBypassed: a bypass entry exempted the request from the rules,
	// and the entry's own limit let it through. Decision.Rule names the
	// entry, never the identity it matched.
	OutcomeBypassed
	// OutcomeBlocked: an enforcing rule's penalty refused the request: the
	// store refused it and started a block, or a block was running (see
	// [Hit.Block]). Counted apart from OutcomeDenied.
	OutcomeBlocked
)

var outcomeNames = [...]string{"allowed", "denied", "shadow_denied", "failed_open", "failed_closed", "local", "bypassed", "blocked"}

// String returns the outcome's metric label, such as "shadow_denied".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// Decision reports how one rule took part in one request's decision.
type Decision struct {
	// Rule is the rule's name, or the bypass entry's for a request a
	// bypass entry exempted. Never a key or an identity.
	Rule string
	// Outcome is what happened.
	Outcome Outcome
	// Shadow reports whether the rule is a dry-run rule.
	Shadow bool
	// Result is the store's answer; zero when the store failed.
	Result Result
	// Err is the store failure behind a failed outcome, or nil.
	Err error
	// Latency is how long the store call for the whole request took.
	Latency time.Duration
}

// Observer receives every decision. Implementations must be safe for
// concurrent use and fast: they run on the request path.
type Observer interface {
	// Observe receives one decision; ctx is the request's context.
	Observe(ctx context.Context, d Decision)
}

// ObserverSource is an optional interface of a [Store] whose configuration
// already names where its events go (the Redis store's Config.Events).
// When that receiver is also an Observer, such as the metrics package's
// Collector, the middleware reports its decisions to it too, unless it is
// given an observer of its own: metrics are attached in one place, the
// store's configuration.
type ObserverSource interface {
	// Observer returns the observer the store's configuration implies, or
	// nil for none.
	Observer() Observer
}

// ObserverFunc adapts a function to the [Observer] interface.
type ObserverFunc func(ctx context.Context, d Decision)

// Observe calls f(ctx, d).
func (f ObserverFunc) Observe(ctx context.Context, d Decision) { f(ctx, d) }
