package sluice

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Limiter limits anything keyed by a string, without HTTP: a background
// job per tenant, a queue consumer, a gRPC handler. It decides one bucket
// per key, with one limit and one algorithm, in any [Store]; the answers
// are the [Result] values the middleware decides requests with. A penalty
// ([WithPenalty]) blocks, for a while, a key it keeps refusing.
//
// Keys go to the store as they are: give each Limiter sharing a store keys
// of its own (such as "export:" + tenant). A Limiter is safe for concurrent
// use, and Allow, AllowN and Peek allocate nothing.
type Limiter struct {
	store Store
	limit Limit
	alg   Algorithm
	// algSet reports that WithAlgorithm chose alg.
	algSet bool
	// clock is the time WaitN reads deadlines in and sleeps on (see
	// WithWaitClock).
	clock WaitClock
	// block and after are the penalty of every hit (see WithPenalty);
	// block 0: none.
	block time.Duration
	after int64
	// penaltySet reports that WithPenalty was given.
	penaltySet bool
}

// LimiterOption configures a [Limiter].
type LimiterOption interface {
	apply(*Limiter) error
}

// limiterOption adapts a function to [LimiterOption].
type limiterOption func(*Limiter) error

func (f limiterOption) apply(l *Limiter) error { return f(l) }

// WithAlgorithm selects the algorithm that enforces the limit. Default:
// [TokenBucket], or [FixedWindow] for a calendar limit (see
// [PerCalendar]), which no other algorithm enforces.
func WithAlgorithm(a Algorithm) LimiterOption {
	return limiterOption(func(l *Limiter) error { l.alg, l.algSet = a, true; return nil })
}

// WithPenalty blocks a key the Limiter refuses: once its calls are refused
// after times within the limit's period, every call on the key is refused
// for block, whatever its bucket holds (a blocked refusal: [Result.Blocked]
// is set, [Result.BlockStarted] on the refusal that starts the block, and
// RetryAfter is the time left in the block). after 0 means 1: the first
// refusal starts the block. The block lives in the store with the key's
// bucket, so every Limiter sharing the store and the key with the same
// limit, algorithm and penalty sees it, and [Limiter.Reset] lifts it. A
// Limiter without this penalty must not share the key: its calls do not
// see the block, and the Redis store replaces a penalty's state it does
// not expect, which lifts the block. A blocked call consumes nothing.
//
// [Limiter.Peek] reports a running block and neither counts toward one nor
// starts one. A refusal [Limiter.Wait] meets counts toward the block as an
// Allow's does, and a blocked refusal makes it sleep for the time left in
// the block (or return at once when that would outlast the context's
// deadline).
//
// NewLimiter refuses, with an error wrapping [ErrInvalidConfig], a block
// that is not positive, is over [MaxBlock] or is not a whole number of
// microseconds, a negative after, and a penalty with the [SlidingLog]
// algorithm (its log has no room for the block). Default: no penalty. See
// [Hit.Block].
func WithPenalty(block time.Duration, after int64) LimiterOption {
	return limiterOption(func(l *Limiter) error {
		l.block, l.after, l.penaltySet = block, after, true
		return nil
	})
}

// checkPenalty reports why l's penalty (see WithPenalty) cannot be
// enforced, as an error wrapping [ErrInvalidConfig], or nil.
func (l *Limiter) checkPenalty() error {
	var problem string
	switch {
	case !l.penaltySet:
		return nil
	case l.block <= 0:
		problem = fmt.Sprintf("block %v: a penalty needs a positive block", l.block)
	case l.block > MaxBlock:
		problem = fmt.Sprintf("block %v is over the longest block, %v", l.block, MaxBlock)
	case l.block%time.Microsecond != 0:
		problem = fmt.Sprintf("block %v is not a whole number of microseconds", l.block)
	case l.after < 0:
		problem = fmt.Sprintf("after %d refusals: at least 1 (0 means 1)", l.after)
	case l.alg == SlidingLog:
		problem = "not with the sliding log algorithm: use the token bucket, the sliding window or the fixed window"
	default:
		return nil
	}
	return fmt.Errorf("%w: NewLimiter: WithPenalty: %s", ErrInvalidConfig, problem)
}

// WaitClock is the time [Limiter.WaitN] waits in. Now is the time a
// context's deadline is compared against; Timer starts a timer on the same
// clock and returns a channel that receives once d has passed, and a
// function that stops the timer. storetest.Clock implements it.
type WaitClock interface {
	// Now returns the current time on the clock.
	Now() time.Time
	// Timer starts a timer of d on the clock.
	Timer(d time.Duration) (c <-chan time.Time, stop func() bool)
}

// WithWaitClock sets the clock [Limiter.WaitN] reads deadlines in and
// sleeps on. Default: the system clock and [time.NewTimer]. Tests pass a
// fake clock whose timers step it, so a wait takes no real time. A nil
// clock is an error wrapping [ErrInvalidConfig].
func WithWaitClock(c WaitClock) LimiterOption {
	return limiterOption(func(l *Limiter) error {
		if c == nil {
			return fmt.Errorf("%w: NewLimiter: nil wait clock", ErrInvalidConfig)
		}
		l.clock = c
		return nil
	})
}

// systemWaitClock is the system clock and its timers.
type systemWaitClock struct{}

func (systemWaitClock) Now() time.Time { return time.Now() }

func (systemWaitClock) Timer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}

// ErrUnsatisfiable reports a [Limiter.WaitN] whose n exceeds the limit's
// capacity: no wait would ever let it pass.
var ErrUnsatisfiable = errors.New("sluice: cost exceeds the capacity")

// NewLimiter returns a Limiter deciding limit, for every key, in store.
// It refuses an unknown algorithm and a limit the algorithm cannot enforce
// (an error wrapping [ErrInvalidLimit]), and a nil store or wait clock and
// a penalty it cannot enforce ([WithPenalty]) (an error wrapping
// [ErrInvalidConfig]).
func NewLimiter(store Store, limit Limit, opts ...LimiterOption) (*Limiter, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: NewLimiter: nil store", ErrInvalidConfig)
	}
	l := &Limiter{store: store, limit: limit, clock: systemWaitClock{}}
	for _, o := range opts {
		if err := o.apply(l); err != nil {
			return nil, err
		}
	}
	if !l.algSet && limit.Calendar != NoCalendar {
		l.alg = FixedWindow
	}
	if !l.alg.Valid() {
		return nil, fmt.Errorf("%w: unknown algorithm %v", ErrInvalidLimit, l.alg)
	}
	if err := l.alg.ValidateLimit(limit); err != nil {
		return nil, err
	}
	if err := l.checkPenalty(); err != nil {
		return nil, err
	}
	return l, nil
}

// MustNewLimiter is like [NewLimiter] but panics on an error; for limits
// fixed in code.
func MustNewLimiter(store Store, limit Limit, opts ...LimiterOption) *Limiter {
	l, err := NewLimiter(store, limit, opts...)
	if err != nil {
		panic(err)
	}
	return l
}

// Limit returns the limit l enforces.
func (l *Limiter) Limit() Limit { return l.limit }

// Allow takes 1 from key's bucket. Being over the limit is a Result whose
// Allowed is false, never an error; errors are bad input (an empty key, an
// error wrapping [ErrInvalidHit]) and store failures.
func (l *Limiter) Allow(ctx context.Context, key string) (Result, error) {
	return l.decide(ctx, key, 1, false)
}

// AllowN takes n from key's bucket, all or nothing. n must be at least 1:
// to read a bucket without consuming, use [Limiter.Peek]. A cost above the
// capacity is refused as Unsatisfiable.
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) (Result, error) {
	return l.decide(ctx, key, n, false)
}

// Peek reports key's bucket as Allow would find it, and consumes nothing:
// Allowed says whether Allow would pass now, Remaining how much is left,
// RetryAfter and ResetAfter how long until one unit, and the whole
// capacity, is back.
func (l *Limiter) Peek(ctx context.Context, key string) (Result, error) {
	return l.decide(ctx, key, 1, true)
}

// Wait blocks until key's bucket admits 1 and takes it, or until ctx ends.
// See [Limiter.WaitN].
func (l *Limiter) Wait(ctx context.Context, key string) error {
	return l.WaitN(ctx, key, 1)
}

// WaitN blocks until key's bucket admits n and takes it, or until ctx
// ends. It sleeps for the store's exact RetryAfter, on one timer, and asks
// again (another caller may have taken the capacity meanwhile); it starts
// no goroutine. It returns at once, without waiting, when the wait would
// outlast ctx's deadline as the wait clock tells it ([WithWaitClock]) (an error wrapping [context.DeadlineExceeded]),
// and when n exceeds the capacity ([ErrUnsatisfiable]). A store failure
// ends the wait with the store's error.
func (l *Limiter) WaitN(ctx context.Context, key string, n int64) error {
	var stop func() bool
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for {
		r, err := l.decide(ctx, key, n, false)
		switch {
		case err != nil:
			return err
		case r.Allowed:
			return nil
		case r.Unsatisfiable:
			return fmt.Errorf("%w: %d above %d", ErrUnsatisfiable, n, l.limit.Capacity())
		}
		// A store owes a positive RetryAfter to a refused hit that can
		// pass later; a floor keeps a store that breaks that promise from
		// turning the loop into a busy one.
		d := max(r.RetryAfter, time.Millisecond)
		if deadline, ok := ctx.Deadline(); ok && deadline.Sub(l.clock.Now()) < d {
			return fmt.Errorf("sluice: waiting %v for %q would outlast the context's deadline: %w", d, key, context.DeadlineExceeded)
		}
		if stop != nil {
			stop()
		}
		var c <-chan time.Time
		c, stop = l.clock.Timer(d)
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-c:
		}
	}
}

// Reset makes key's bucket full again, as if never used, and lifts its
// block ([WithPenalty]). The store must implement [Resetter]; otherwise
// Reset returns an error wrapping [errors.ErrUnsupported].
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if key == "" {
		return errEmptyKey
	}
	rs, ok := l.store.(Resetter)
	if !ok {
		return fmt.Errorf("sluice: %T cannot reset buckets: %w", l.store, errors.ErrUnsupported)
	}
	return rs.Reset(ctx, []Hit{l.hit(key, 1, false)})
}

// hit returns the hit of a decision on key: a cost of n, or a peek.
func (l *Limiter) hit(key string, n int64, peek bool) Hit {
	return Hit{Key: key, Limit: l.limit, Algorithm: l.alg, Cost: n, Peek: peek, Block: l.block, After: l.after}
}

var errEmptyKey = fmt.Errorf("%w: empty key", ErrInvalidHit)

// call is the one hit and one result of a decision, pooled so that a
// decision allocates nothing: a slice passed to an interface method
// escapes.
type call struct {
	hit [1]Hit
	out [1]Result
}

var calls = sync.Pool{New: func() any { return new(call) }}

// decide checks its input before any store call, then decides one hit.
func (l *Limiter) decide(ctx context.Context, key string, n int64, peek bool) (Result, error) {
	if key == "" {
		return Result{}, errEmptyKey
	}
	if n < 1 {
		return Result{}, fmt.Errorf("%w: cost %d: must be at least 1", ErrInvalidHit, n)
	}
	c := calls.Get().(*call)
	c.hit[0] = l.hit(key, n, peek)
	c.out[0] = Result{} // a store may leave fields it has nothing to say of
	err := l.store.Take(ctx, c.hit[:], c.out[:])
	r := c.out[0]
	c.hit[0].Key = "" // the pool must not keep the caller's key alive
	calls.Put(c)
	return r, err
}
