package sluice

import (
	"context"
	"time"
)

// Usage is how much of its limit one key has used, as a billing page or a
// support tool shows it: see [Limiter.Usage].
type Usage struct {
	// Limit is the limit in force.
	Limit Limit
	// Remaining is how much is left now.
	Remaining int64
	// Used is what the current period has counted: the limit less what
	// remains (for a token bucket, what has not refilled yet).
	Used int64
	// ResetAfter is the time until the bucket is whole again: for a
	// window algorithm and a calendar limit, until its period ends, once
	// it has counted anything; for a token bucket, until it has refilled.
	ResetAfter time.Duration
	// PeriodStart and PeriodEnd bound the current period of a calendar
	// limit, in its zone; zero for any other limit.
	PeriodStart, PeriodEnd time.Time
	// BlockedFor is the time left in the key's penalty block
	// ([WithPenalty]); zero when the key is not blocked. While it runs the
	// store reports nothing remaining, so Used is the whole limit.
	BlockedFor time.Duration
}

// Usage reports how much of the limit key has used, without consuming
// anything (a peek: see [Limiter.Peek]). A calendar limit's period is the
// one holding the Limiter's clock's now ([WithWaitClock]).
func (l *Limiter) Usage(ctx context.Context, key string) (Usage, error) {
	r, err := l.Peek(ctx, key)
	if err != nil {
		return Usage{}, err
	}
	u := Usage{Limit: l.limit, Remaining: r.Remaining, Used: max(l.limit.Capacity()-r.Remaining, 0), ResetAfter: r.ResetAfter}
	if r.Blocked {
		u.BlockedFor = r.RetryAfter
	}
	if l.limit.Calendar != NoCalendar {
		u.PeriodStart, u.PeriodEnd = l.limit.Window(l.clock.Now())
		loc := l.limit.Location()
		u.PeriodStart, u.PeriodEnd = u.PeriodStart.In(loc), u.PeriodEnd.In(loc)
	}
	return u, nil
}
