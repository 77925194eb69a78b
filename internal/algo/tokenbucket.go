package algo

import "github.com/sluicehq/sluice"

// Outcome is the decision for one hit, in microseconds. Remaining counts
// are kept as slack (capacity left, in µs) and divided by Interval only
// when a result is built, so a decision costs one division, not two.
type Outcome struct {
	Allowed       bool  // the hit passes on its own
	Unsatisfiable bool  // the cost exceeds the capacity
	Interval      int64 // µs per unit
	Slack         int64 // µs of capacity left if nothing is consumed
	ResetAfter    int64 // µs until full if nothing is consumed
	SlackIf       int64 // µs of capacity left if the hit consumes (Allowed only)
	ResetAfterIf  int64 // µs until full if the hit consumes (Allowed only)
	RetryAfter    int64 // µs until this cost would pass (not Allowed only)
}

// Remaining returns the units left if nothing is consumed.
func (o *Outcome) Remaining() int64 { return floorDivNonNeg(o.Slack, o.Interval) }

// RemainingIf returns the units left if the hit consumes.
func (o *Outcome) RemainingIf() int64 { return floorDivNonNeg(o.SlackIf, o.Interval) }

// TokenBucket decides a hit of cost on a GCRA bucket whose theoretical
// arrival time is tat (0 for a bucket never used), at time now, for a limit
// with emission interval interval and capacity capacity. It returns the
// outcome and the arrival time to store if the hit consumes. The bucket is
// empty (full capacity) again at time next; it can be forgotten from then on.
//
// force consumes even when the hit does not pass (an after-the-fact
// charge), putting the bucket into debt of at most one more capacity.
func TokenBucket(now, tat, interval, capacity, cost int64, force bool) (o Outcome, next int64) {
	base := tat
	if base < now {
		base = now
	}
	tau := capacity * interval
	o.Interval = interval
	o.Slack = now + tau - base
	o.ResetAfter = base - now
	switch {
	case cost > capacity:
		o.Unsatisfiable = true
		next = base + min(cost, 2*capacity)*interval // cost×interval could leave the exact range
	default:
		next = base + cost*interval
		if next-now > tau {
			o.RetryAfter = next - tau - now
		} else {
			o.Allowed = true
		}
	}
	if !o.Allowed && !force {
		return o, tat
	}
	next = max(min(next, now+2*tau), tat) // a debt is capped; a clock gone back changes nothing
	o.SlackIf = now + tau - next
	o.ResetAfterIf = next - now
	return o, next
}

// floorDivNonNeg returns a/b rounded down, or 0 when a is negative (the
// state holds more debt than the current capacity, e.g. after a limit
// shrank).
func floorDivNonNeg(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return a / b
}

// TBNums are the numbers of a valid token-bucket limit that a decision
// needs: its emission interval in µs, its capacity, and Tau, capacity ×
// interval. Three words, passed in registers.
type TBNums struct {
	Interval, Capacity, Tau int64
}

// NewTBNums returns the numbers of a bucket of capacity tokens, one every
// interval µs.
func NewTBNums(interval, capacity int64) TBNums {
	return TBNums{Interval: interval, Capacity: capacity, Tau: interval * capacity}
}

// TokenBucketAdmits is [TokenBucket] for the most common case, an unforced
// hit that passes, in a few instructions that inline: it returns the
// arrival time to store and true when a hit of cost passes on bucket n
// whose arrival time is tat, and false when the caller must call
// TokenBucket to find out why not. [AdmittedResult] writes the result. Both
// agree with TokenBucket and [Outcome.Result] exactly
// (TestTokenBucketAdmitsAgrees).
func TokenBucketAdmits(now, tat, cost int64, n TBNums) (next int64, ok bool) {
	next = max(tat, now) + cost*n.Interval // cost ≤ capacity keeps it exact
	return next, cost <= n.Capacity && next-now <= n.Tau
}

// AdmittedResult writes into r the result of a hit of cost that
// [TokenBucketAdmits] admitted at now on bucket n, whose arrival time was
// tat, storing next, with its receipt. A bucket not in debt (tat ≤ now, the usual case for
// any key but a hot one) has capacity − cost tokens left, which spares the
// division.
func AdmittedResult(r *sluice.Result, l sluice.Limit, now, tat, next, cost int64, n TBNums) {
	left := n.Capacity - cost
	if tat > now {
		left = floorDivNonNeg(now+n.Tau-next, n.Interval)
	}
	*r = sluice.Result{
		Allowed:    true,
		Limit:      l,
		Remaining:  left,
		ResetAfter: Micros(next - now),
		Receipt:    sluice.Receipt{Taken: cost, Mark: next},
	}
}
