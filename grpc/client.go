package sluicegrpc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Defaults of [UnaryClientInterceptor] and [StreamClientInterceptor].
const (
	// DefaultMaxWait bounds the time one call spends waiting, in all.
	DefaultMaxWait = 30 * time.Second
	// DefaultMaxRetries bounds how many times one call is sent again.
	DefaultMaxRetries = 3
	// DefaultJitter is the largest share of a wait added at random, so
	// clients told the same delay do not come back together.
	DefaultJitter = 0.2
)

// ClientOption configures [UnaryClientInterceptor] and
// [StreamClientInterceptor]. The functions below that return one are
// their options.
type ClientOption interface {
	apply(*clientConfig) error
}

type clientOptionFunc func(*clientConfig) error

func (f clientOptionFunc) apply(c *clientConfig) error { return f(c) }

type clientConfig struct {
	maxWait    time.Duration
	maxRetries int
	jitter     float64
	idempotent func(fullMethod string) bool
	now        func() time.Time
	sleep      func(ctx context.Context, d time.Duration) error
	rand       func() float64
}

// WithMaxWait bounds the total time one call waits before retries.
// Default: [DefaultMaxWait]. It must not be negative.
func WithMaxWait(d time.Duration) ClientOption {
	return clientOptionFunc(func(c *clientConfig) error {
		if d < 0 {
			return invalidConfig("WithMaxWait: negative %v", d)
		}
		c.maxWait = d
		return nil
	})
}

// WithMaxRetries bounds how many times one call is sent again; 0 never
// retries. Default: [DefaultMaxRetries]. It must not be negative.
func WithMaxRetries(n int) ClientOption {
	return clientOptionFunc(func(c *clientConfig) error {
		if n < 0 {
			return invalidConfig("WithMaxRetries: negative %d", n)
		}
		c.maxRetries = n
		return nil
	})
}

// WithJitter sets the largest share of a wait added at random, from 0 to
// 1; the wait is never shortened. Default: [DefaultJitter].
func WithJitter(share float64) ClientOption {
	return clientOptionFunc(func(c *clientConfig) error {
		if !(share >= 0 && share <= 1) {
			return invalidConfig("WithJitter: %v is not within 0 to 1", share)
		}
		c.jitter = share
		return nil
	})
}

// WithIdempotent names the methods that may be sent again after
// codes.Unavailable with a retry delay, as a server failing closed
// answers: such a status may come from a server that had started the
// work, so by default only ResourceExhausted, a refusal before any work,
// is retried. idempotent must be safe for concurrent use.
func WithIdempotent(idempotent func(fullMethod string) bool) ClientOption {
	return clientOptionFunc(func(c *clientConfig) error {
		if idempotent == nil {
			return invalidConfig("WithIdempotent: nil function")
		}
		c.idempotent = idempotent
		return nil
	})
}

// WithTime sets the interceptor's clock and how it sleeps (sleep returns
// ctx's error if ctx ends first). A call's deadline is compared against
// now. Default: the system clock and a timer. Tests pass a fake clock
// whose sleep moves it, so no test waits.
func WithTime(now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) ClientOption {
	return clientOptionFunc(func(c *clientConfig) error {
		if now == nil || sleep == nil {
			return invalidConfig("WithTime: nil clock or sleep")
		}
		c.now, c.sleep = now, sleep
		return nil
	})
}

// UnaryClientInterceptor returns a client interceptor that honours the
// retry delay servers give with a refusal (google.rpc.RetryInfo, which
// [DenialStatus] sends), as the sluice client package's transport honours
// Retry-After: a call that ends with codes.ResourceExhausted and a retry
// delay is sent again after that delay, plus up to the jitter share more
// (the jitter's range doubling with each refusal of the call), at most
// [WithMaxRetries] times. codes.Unavailable with a retry delay is retried
// the same way for the methods [WithIdempotent] names. Any other outcome
// is returned as it is, and so is the last refusal once the retries are
// spent.
//
// A wait that would take the call past its maximum total wait
// ([WithMaxWait]) or past its context's deadline is not started: the call
// ends at once with a [*RefusedError] wrapping [ErrWaitTooLong] or
// [context.DeadlineExceeded], which carries the server's status. A
// context ending during a wait ends it at once, with the context's status
// (codes.Canceled or codes.DeadlineExceeded). Invalid options are an error wrapping sluice.ErrInvalidConfig.
func UnaryClientInterceptor(opts ...ClientOption) (grpc.UnaryClientInterceptor, error) {
	c, err := newClientConfig(opts)
	if err != nil {
		return nil, err
	}
	return c.intercept, nil
}

// newClientConfig returns the configuration of opts.
func newClientConfig(opts []ClientOption) (*clientConfig, error) {
	c := &clientConfig{
		maxWait: DefaultMaxWait, maxRetries: DefaultMaxRetries, jitter: DefaultJitter,
		now: time.Now, sleep: sleep, rand: rand.Float64,
	}
	for _, o := range opts {
		if o == nil {
			return nil, invalidConfig("nil ClientOption")
		}
		if err := o.apply(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// intercept is the unary interceptor.
func (c *clientConfig) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	var waited time.Duration
	for attempt := 1; ; attempt++ {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err == nil {
			return nil
		}
		wait, err := c.next(ctx, method, err, attempt, waited)
		if err != nil {
			return err
		}
		if err := c.pause(ctx, wait); err != nil {
			return err
		}
		waited += wait
	}
}

// next decides what follows the attempt-th attempt of a call of method
// that ended with err, after waits of waited in all: the wait before the
// call is sent again, or, when it is not, the error to end the call with
// (err itself, or a *RefusedError).
func (c *clientConfig) next(ctx context.Context, method string, err error, attempt int, waited time.Duration) (time.Duration, error) {
	st, ok := status.FromError(err)
	if !ok || !c.retryable(method, st.Code()) {
		return 0, err
	}
	wait, ok := retryDelay(st)
	if !ok || attempt > c.maxRetries {
		return 0, err
	}
	// The jitter's range doubles with each refusal of this call, so
	// clients that keep colliding spread further apart.
	wait += time.Duration(c.rand() * c.jitter * float64(wait) * float64(int64(1)<<min(attempt-1, 5)))
	switch {
	case waited+wait > c.maxWait:
		return 0, &RefusedError{Status: st, Wait: wait, Attempts: attempt,
			Err: fmt.Errorf("%w: %v, with %v waited of at most %v", ErrWaitTooLong, wait, waited, c.maxWait)}
	case !c.fitsDeadline(ctx, wait):
		return 0, &RefusedError{Status: st, Wait: wait, Attempts: attempt,
			Err: fmt.Errorf("sluicegrpc: waiting %v would outlast the call's context: %w", wait, context.DeadlineExceeded)}
	}
	return wait, nil
}

// pause waits d, or until ctx ends: then it returns ctx's status
// (codes.Canceled or codes.DeadlineExceeded).
func (c *clientConfig) pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if err := c.sleep(ctx, d); err != nil {
		return status.FromContextError(err).Err()
	}
	return nil
}

// retryable reports whether a call of method that ended with code may be
// sent again after a retry delay.
func (c *clientConfig) retryable(method string, code codes.Code) bool {
	switch code {
	case codes.ResourceExhausted:
		return true
	case codes.Unavailable:
		return c.idempotent != nil && c.idempotent(method)
	}
	return false
}

// fitsDeadline reports whether a wait of d ends before ctx's deadline, on
// the interceptor's clock.
func (c *clientConfig) fitsDeadline(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return !ok || deadline.Sub(c.now()) > d
}

// sleep waits d on a timer, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
