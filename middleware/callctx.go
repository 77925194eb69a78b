package middleware

import (
	"context"
	"sync"
	"time"
)

// budgetTicks is how many ticks a budget is cut into: a store call's
// context is done at most budget/budgetTicks after its deadline.
const budgetTicks = 16

// callContexts makes the contexts of store calls: the request's values,
// and a deadline no later than the latency budget (or the request's own
// deadline, if that is earlier).
//
// They are not context.WithTimeout's, which arms a timer per call and
// stops it when the call returns. Adding that timer wakes a thread that
// sleeps in the network poller whenever it is the earliest timer, which
// is nearly always, as the previous call's timer is already gone. On a
// loaded two-core machine, those wakeups raised the p99 of every Redis
// call by milliseconds (bench/cmd/load, "redis" against the same server
// without the budget: in-middleware p99 3.5–5.8 ms against 2.1–2.9 ms).
// Here, calls whose deadlines fall in the same tick (budget/16) share one
// Done channel, closed by one timer at the end of that tick, which is never
// stopped early. The deadline itself is exact: go-redis gives it to the
// socket as its read and write deadline.
//
// A call's context is done only at its deadline. The request's cancellation
// (its client gone) does not cut a call short: the call ends within the
// budget anyway, and one cut short would be ambiguous. A request already
// done before its call gets its own context instead, so the store refuses
// it at once, as before.
type callContexts struct {
	tick time.Duration

	mu    sync.Mutex
	ticks map[int64]chan struct{} // by the tick's end in ticks since the epoch
}

func newCallContexts(budget time.Duration) *callContexts {
	return &callContexts{tick: max(budget/budgetTicks, time.Microsecond), ticks: map[int64]chan struct{}{}}
}

// with returns the context of a store call made now for a request whose
// context is parent.
func (c *callContexts) with(parent context.Context, budget time.Duration) context.Context {
	if parent.Err() != nil {
		return parent
	}
	deadline := time.Now().Add(budget)
	if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	// Values are looked up through WithoutCancel, which hides the request's
	// cancellation from context.Cause: a call past its deadline reports
	// DeadlineExceeded as its cause, not the request's (nil) one.
	return &callContext{values: context.WithoutCancel(parent), deadline: deadline, done: c.done(deadline)}
}

// done returns the channel closed at the end of deadline's tick.
func (c *callContexts) done(deadline time.Time) <-chan struct{} {
	end := (deadline.UnixNano() + int64(c.tick) - 1) / int64(c.tick) // ceiling
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.ticks[end]
	if !ok {
		ch = make(chan struct{})
		c.ticks[end] = ch
		time.AfterFunc(time.Until(time.Unix(0, end*int64(c.tick))), func() {
			c.mu.Lock()
			delete(c.ticks, end)
			c.mu.Unlock()
			close(ch)
		})
	}
	return ch
}

// callContext is a store call's context: see [callContexts].
type callContext struct {
	values   context.Context // the request's, without its cancellation
	deadline time.Time
	done     <-chan struct{}
}

func (c *callContext) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *callContext) Done() <-chan struct{}       { return c.done }
func (c *callContext) Value(key any) any           { return c.values.Value(key) }

func (c *callContext) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
