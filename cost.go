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
