package rules

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice"
)

// Concurrency makes a rule a concurrency limit in place of a rate: at most
// Max requests of one identity in flight at once, across every instance
// sharing the store. A request takes a slot in the same store call as its
// other rules (all or nothing) and frees it when its handler returns or
// panics; a slot held by a process that died is freed after Hold. A
// refused request gets Retry-After: 1 (a slot may be freed at any moment).
// See [sluice.Hit.Concurrency].
//
// A concurrency rule has no Limit, Algorithm, Cost, MaxCost, MaxLimit,
// Lease, Colocate, Shadow, Count or Penalty. Its overrides replace Max: an
// override's Limit is sluice.Per(max, Hold), with the rule's Hold.
type Concurrency struct {
	// Max is how many requests of one identity may be in flight at once:
	// from 1 to [sluice.MaxLogLimit].
	Max int64
	// Hold is how long a slot outlives a process that died without
	// freeing it: from [MinHold] to [MaxHold].
	Hold time.Duration
}

// MinHold and MaxHold bound a concurrency rule's Hold.
const (
	MinHold = time.Second
	MaxHold = 24 * time.Hour
)

// Limit returns the limit of the rule's hits: Max slots per Hold.
func (c *Concurrency) Limit() sluice.Limit { return sluice.Per(c.Max, c.Hold) }

// validate reports the field of r that is wrong for a concurrency rule and
// why, or "", "" when r is not one or is a valid one. A rule New has
// filled in (Limit and Algorithm set from Concurrency) is valid too.
func (c *Concurrency) validate(r *Rule) (field, problem string) {
	const not = "not with concurrency: a concurrency rule counts requests in flight, not a rate"
	switch {
	case c == nil:
		return "", ""
	case c.Max < 1:
		return "concurrency.max", fmt.Sprintf("%d: at least 1", c.Max)
	case c.Max > sluice.MaxLogLimit:
		return "concurrency.max", fmt.Sprintf("%d is over the most slots, %d", c.Max, sluice.MaxLogLimit)
	case c.Hold < MinHold || c.Hold > MaxHold:
		return "concurrency.hold", fmt.Sprintf("%v: from %v to %v", c.Hold, MinHold, time.Duration(MaxHold))
	case r.Limit != sluice.Limit{} && r.Limit != c.Limit():
		return "limit", not
	case r.Algorithm != sluice.TokenBucket && r.Algorithm != sluice.SlidingLog:
		return "algorithm", not
	case r.Cost > 1:
		return "cost", not
	case r.MaxCost != 0:
		return "max_cost", not
	case r.MaxLimit != sluice.Limit{}:
		return "max_limit", not
	case r.Lease != sluice.LeasePolicy{Rule: r.Lease.Rule}:
		return "lease", not
	case !r.Colocate.IsZero():
		return "colocate", not
	case r.Shadow:
		return "shadow", not
	case r.Count != nil:
		return "count", not
	case r.Penalty != nil:
		return "penalty", not
	}
	return "", ""
}

// concurrent returns r as its hits decide it: a concurrency rule's Limit
// and Algorithm filled in from Concurrency.
func (r Rule) concurrent() Rule {
	if r.Concurrency != nil {
		r.Limit, r.Algorithm = r.Concurrency.Limit(), sluice.SlidingLog
	}
	return r
}
