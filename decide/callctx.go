package decide

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// budgetTicks is how many ticks a budget is cut into: a store call's
	// context is done at most budget/budgetTicks after its deadline.
	budgetTicks = 16
	// maxTicked is the longest budget whose calls share ticks. A longer one
	// is no latency budget; its calls get a context.WithDeadline each.
	maxTicked = time.Hour
)

// callContexts makes the contexts of store calls: the request's values,
// and a deadline no later than the latency budget (or the request's own
// deadline, if that is earlier).
//
// They are not context.WithTimeout's, which arms a timer per call and
// stops it when the call returns: that timer is nearly always the earliest,
// so arming it wakes a thread sleeping in the network poller, which raises
// the tail latency of busy servers (BENCHMARKS.md). Here, calls whose deadlines fall in the same tick (budget/16) share one
// context that is done at the end of that tick, by a timer never stopped
// early. The call's deadline itself is exact: go-redis gives it to the
// socket as its read and write deadline.
//
// A call's context is done only at its deadline. The request's cancellation
// (its client gone) does not cut a call short: the call ends within the
// budget anyway, and one cut short would be ambiguous. A request already
// done before its call is given its own context, which a store refuses at
// once (redisstore does, without sending).
type callContexts struct {
	budget time.Duration
	tick   time.Duration
	epoch  time.Time // ticks count from it, on the monotonic clock

	last  atomic.Pointer[tick] // the latest tick handed out: most calls'
	mu    sync.Mutex
	ticks map[int64]*tick // live ticks by end
}

// tick is the context shared by the calls whose deadlines fall in one tick.
type tick struct {
	end int64           // in ticks since epoch
	ctx context.Context // done at the tick's end
}

// newCallContexts returns the call contexts of a decider with budget.
func newCallContexts(budget time.Duration) *callContexts {
	return &callContexts{budget: budget, tick: max(budget/budgetTicks, time.Microsecond),
		epoch: time.Now(), ticks: map[int64]*tick{}}
}

// with returns the context of a store call made now for a request whose
// context is parent, and, when it is not nil, the function to call when
// the call returns.
func (c *callContexts) with(parent context.Context) (context.Context, context.CancelFunc) {
	if parent.Err() != nil {
		return parent, nil
	}
	now := time.Now()
	deadline := now.Add(c.budget)
	if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	values := context.WithoutCancel(parent)
	if c.budget > maxTicked || !deadline.After(now) {
		// Rare: a budget too long to tick, or a request's deadline that
		// has passed (its own timer has not fired yet).
		return context.WithDeadline(values, deadline)
	}
	return &callContext{values: values, deadline: deadline, tick: c.tickOf(deadline)}, nil
}

// tickOf returns the context done at the end of deadline's tick; deadline
// is in the future and at most a budget away.
func (c *callContexts) tickOf(deadline time.Time) context.Context {
	end := int64((deadline.Sub(c.epoch) + c.tick - 1) / c.tick) // ceiling
	if t := c.last.Load(); t != nil && t.end == end {
		return t.ctx
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.ticks[end]
	if !ok {
		ctx, cancel := context.WithDeadline(context.Background(), c.epoch.Add(time.Duration(end)*c.tick))
		t = &tick{end: end, ctx: ctx}
		c.ticks[end] = t
		context.AfterFunc(ctx, func() {
			// No call can ask for this tick again: any deadline still to
			// come is after now, past this tick's end.
			c.mu.Lock()
			delete(c.ticks, end)
			c.mu.Unlock()
			cancel()
		})
	}
	if l := c.last.Load(); l == nil || t.end > l.end {
		c.last.Store(t)
	}
	return t.ctx
}

// callContext is a store call's context: see [callContexts].
type callContext struct {
	values   context.Context // the request's, without its cancellation
	deadline time.Time
	tick     context.Context // done at the end of deadline's tick
}

func (c *callContext) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *callContext) Done() <-chan struct{}       { return c.tick.Done() }
func (c *callContext) Err() error                  { return c.tick.Err() }
func (c *callContext) Value(key any) any           { return c.values.Value(key) }

// AfterFunc lets contexts derived from c (context.WithCancel and the like)
// follow it without a goroutine each.
func (c *callContext) AfterFunc(f func()) (stop func() bool) { return context.AfterFunc(c.tick, f) }

func (c *callContext) String() string {
	return fmt.Sprintf("%v.WithDeadline(%v [%v], sluice store call)", c.values, c.deadline, time.Until(c.deadline))
}
