// Package retrywait is the policy by which the client package's transport
// and the gRPC module's client interceptors wait out a refusal: the
// defaults, the jitter added to the delay a server asks for, and the
// bounds a wait must keep (the total wait of one call, and its context's
// deadline).
package retrywait

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// The defaults of a [Policy].
const (
	// DefaultMaxWait bounds the time one call spends waiting, in all.
	DefaultMaxWait = 30 * time.Second
	// DefaultMaxRetries bounds how many times one call is sent again.
	DefaultMaxRetries = 3
	// DefaultJitter is the largest share of a wait added at random, so
	// clients told the same delay do not come back together.
	DefaultJitter = 0.2
)

// Policy decides how long a refused call waits before it is sent again,
// and whether the wait may start. Create it with [New]; set it with its
// Set methods, which validate as the front ends' options do.
type Policy struct {
	// MaxWait bounds a call's waits, in all.
	MaxWait time.Duration
	// MaxRetries bounds how many times a call is sent again.
	MaxRetries int
	// Jitter is the largest share of a wait added at random, from 0 to 1.
	Jitter float64
	// Now is the clock a context's deadline is compared against.
	Now func() time.Time
	// Sleep waits d, or returns ctx's error if ctx ends first.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0, 1), the jitter's source.
	Rand func() float64

	// tooLong is the error a wait past MaxWait wraps; what names what
	// waits ("request", "call") in the error of a wait past a deadline.
	tooLong error
	what    string
}

// New returns the default policy. A wait past MaxWait is refused with an
// error wrapping tooLong, a wait past the context's deadline with an error
// wrapping [context.DeadlineExceeded] that calls what waits what
// ("request", "call").
func New(tooLong error, what string) Policy {
	return Policy{
		MaxWait: DefaultMaxWait, MaxRetries: DefaultMaxRetries, Jitter: DefaultJitter,
		Now: time.Now, Sleep: Sleep, Rand: rand.Float64,
		tooLong: tooLong, what: what,
	}
}

// SetMaxWait sets MaxWait; it must not be negative. The error names the
// option, WithMaxWait, without a package prefix.
func (p *Policy) SetMaxWait(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("WithMaxWait: negative %v", d)
	}
	p.MaxWait = d
	return nil
}

// SetMaxRetries sets MaxRetries; it must not be negative.
func (p *Policy) SetMaxRetries(n int) error {
	if n < 0 {
		return fmt.Errorf("WithMaxRetries: negative %d", n)
	}
	p.MaxRetries = n
	return nil
}

// SetJitter sets Jitter, from 0 to 1.
func (p *Policy) SetJitter(share float64) error {
	if !(share >= 0 && share <= 1) {
		return fmt.Errorf("WithJitter: %v is not within 0 to 1", share)
	}
	p.Jitter = share
	return nil
}

// SetTime sets Now and Sleep, neither nil.
func (p *Policy) SetTime(now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) error {
	if now == nil || sleep == nil {
		return errors.New("WithTime: nil clock or sleep")
	}
	p.Now, p.Sleep = now, sleep
	return nil
}

// Retries reports whether a call refused on its attempt-th sending (the
// first is 1) may be sent again.
func (p *Policy) Retries(attempt int) bool { return attempt <= p.MaxRetries }

// Jittered returns delay, the wait a server asked for after the
// attempt-th sending of a call, plus up to the jitter share more, never
// less. The jitter's range doubles with each refusal of the call (up to
// 32 times the share), so clients that keep colliding spread further
// apart.
func (p *Policy) Jittered(delay time.Duration, attempt int) time.Duration {
	return delay + time.Duration(p.Rand()*p.Jitter*float64(delay)*float64(int64(1)<<min(attempt-1, 5)))
}

// Check returns nil when a wait of wait, after waits of waited in all,
// keeps a call within MaxWait and ends before ctx's deadline; otherwise
// the error that says which bound it breaks.
func (p *Policy) Check(ctx context.Context, waited, wait time.Duration) error {
	switch {
	case waited+wait > p.MaxWait:
		return fmt.Errorf("%w: %v, with %v waited of at most %v", p.tooLong, wait, waited, p.MaxWait)
	case !p.FitsDeadline(ctx, wait):
		return fmt.Errorf("waiting %v would outlast the %s's context: %w", wait, p.what, context.DeadlineExceeded)
	}
	return nil
}

// Fits reports whether a wait of d, after waits of waited in all, keeps a
// call within its bounds: Check would return nil.
func (p *Policy) Fits(ctx context.Context, waited, d time.Duration) bool {
	return waited+d <= p.MaxWait && p.FitsDeadline(ctx, d)
}

// FitsDeadline reports whether a wait of d ends before ctx's deadline, on
// the policy's clock.
func (p *Policy) FitsDeadline(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return !ok || deadline.Sub(p.Now()) > d
}

// Sleep waits d on a timer, or until ctx ends: then it returns ctx's
// cause.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
