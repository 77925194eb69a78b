package sluice

import "context"

type costKey struct{}

// WithCost returns a context that sets the cost of the request it belongs
// to: a middleware in front of the limiter calls it, and the limiter charges
// n instead of each rule's fixed cost, capped by the rule's MaxCost. n must
// not be negative; 0 makes the request a peek: it is decided as a request of
// each rule's cost would be and reported in the headers, consumes nothing,
// and is never refused.
func WithCost(ctx context.Context, n int64) context.Context {
	return context.WithValue(ctx, costKey{}, n)
}

// CostFrom returns the cost [WithCost] set on ctx, if any.
func CostFrom(ctx context.Context) (n int64, ok bool) {
	n, ok = ctx.Value(costKey{}).(int64)
	return n, ok
}

// RequestLimit is a limit a request set for itself with [WithLimit].
type RequestLimit struct {
	// Rule names the rule the limit is for.
	Rule string
	// Limit is the limit set.
	Limit Limit
}

type limitKey struct{}

// WithLimit returns a context that sets the limit of the rule named rule
// for the request it belongs to: a middleware in front of the limiter,
// which has loaded the customer, calls it, as it calls [WithCost]. The
// limit replaces the rule's (and an override's, see rules.Rule.Overrides)
// with the rule's period and algorithm: its Period is 0 or the rule's (a
// Limit of only a Rate takes the rule's period, a calendar rule's calendar
// and zone too). It
// is capped by the rule's MaxLimit; a rule without one lets a request
// lower its limit, never raise it. Bypass entries are not rules: a limit
// set for one is ignored.
//
// A limit for a rule no rule set of the process has, with another period,
// or that the rule's algorithm cannot enforce, is ignored, and one above
// the cap is capped: the limiter logs it (at most once a second) and
// reports it to an observer that is a [RequestLimitObserver]. A later
// WithLimit for the same rule replaces an earlier one.
func WithLimit(ctx context.Context, rule string, l Limit) context.Context {
	prev := Limits(ctx)
	limits := make([]RequestLimit, len(prev), len(prev)+1)
	copy(limits, prev)
	return context.WithValue(ctx, limitKey{}, append(limits, RequestLimit{Rule: rule, Limit: l}))
}

// LimitFrom returns the limit [WithLimit] last set on ctx for the rule
// named rule, if any.
func LimitFrom(ctx context.Context, rule string) (Limit, bool) {
	limits := Limits(ctx)
	for i := len(limits) - 1; i >= 0; i-- {
		if limits[i].Rule == rule {
			return limits[i].Limit, true
		}
	}
	return Limit{}, false
}

// Limits returns the limits [WithLimit] set on ctx, in the order they were
// set (a rule set twice is listed twice; the later one applies), or nil.
// The slice is shared: do not modify it.
func Limits(ctx context.Context) []RequestLimit {
	limits, _ := ctx.Value(limitKey{}).([]RequestLimit)
	return limits
}

// RequestLimitAction says what a limiter did with a limit a request set
// for itself ([WithLimit]) instead of applying it as set.
type RequestLimitAction uint8

const (
	// RequestLimitCapped: the limit was above the rule's cap (its MaxLimit,
	// or its own limit without one) and the cap applied instead.
	RequestLimitCapped RequestLimitAction = iota
	// RequestLimitUnknownRule: no rule set of the process has a rule of
	// that name (a misspelt name, a rule since removed); the limit was
	// ignored.
	RequestLimitUnknownRule
	// RequestLimitInvalid: the limit has another period than the rule's,
	// or the rule's algorithm cannot enforce it; it was ignored.
	RequestLimitInvalid
)

var requestLimitActionNames = [...]string{"capped", "unknown_rule", "invalid"}

// String returns the action's metric label: "capped", "unknown_rule" or
// "invalid".
func (a RequestLimitAction) String() string {
	if int(a) < len(requestLimitActionNames) {
		return requestLimitActionNames[a]
	}
	return "unknown"
}

// RequestLimitEvent reports a limit a request set for itself
// ([WithLimit]) that a limiter capped or ignored.
type RequestLimitEvent struct {
	// Rule is the rule name the request gave.
	Rule string
	// Action is what the limiter did.
	Action RequestLimitAction
	// Requested is the limit the request set.
	Requested Limit
	// Applied is the limit that applied instead: the cap, or, when the
	// request's limit was ignored, zero.
	Applied Limit
}

// RequestLimitObserver is an optional interface of an [Observer]: a
// limiter reports to an observer that implements it each limit a request
// set for itself that it capped or ignored. The metrics package counts
// them.
type RequestLimitObserver interface {
	// ObserveRequestLimit receives one capped or ignored limit; ctx is the
	// request's context.
	ObserveRequestLimit(ctx context.Context, e RequestLimitEvent)
}
