package sluicegrpc

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/retrywait"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Defaults of [UnaryClientInterceptor] and [StreamClientInterceptor].
const (
	// DefaultMaxWait bounds the time one call spends waiting, in all: 30 s.
	DefaultMaxWait = retrywait.DefaultMaxWait
	// DefaultMaxRetries bounds how many times one call is sent again: 3.
	DefaultMaxRetries = retrywait.DefaultMaxRetries
	// DefaultJitter is the largest share of a wait added at random, so
	// clients told the same delay do not come back together: 0.2.
	DefaultJitter = retrywait.DefaultJitter
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
	retrywait.Policy
	idempotent func(fullMethod string) bool
}

// policyError returns err, an error of the retry policy's Set methods, as
// an error wrapping sluice.ErrInvalidConfig.
func policyError(err error) error {
	if err != nil {
		return invalidConfig("%v", err)
	}
	return nil
}

// WithMaxWait bounds the total time one call waits before retries.
// Default: [DefaultMaxWait]. It must not be negative.
func WithMaxWait(d time.Duration) ClientOption {
	return clientOptionFunc(func(c *clientConfig) error { return policyError(c.SetMaxWait(d)) })
}

// WithMaxRetries bounds how many times one call is sent again; 0 never
// retries. Default: [DefaultMaxRetries]. It must not be negative.
func WithMaxRetries(n int) ClientOption {
	return clientOptionFunc(func(c *clientConfig) error { return policyError(c.SetMaxRetries(n)) })
}

// WithJitter sets the largest share of a wait added at random, from 0 to
// 1; the wait is never shortened. Default: [DefaultJitter].
func WithJitter(share float64) ClientOption {
	return clientOptionFunc(func(c *clientConfig) error { return policyError(c.SetJitter(share)) })
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
	return clientOptionFunc(func(c *clientConfig) error { return policyError(c.SetTime(now, sleep)) })
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
	c := &clientConfig{Policy: retrywait.New(ErrWaitTooLong, "call")}
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
	if !ok || !c.Retries(attempt) {
		return 0, err
	}
	wait = c.Jittered(wait, attempt)
	if err := c.Check(ctx, waited, wait); err != nil {
		return 0, &RefusedError{Status: st, Wait: wait, Attempts: attempt, Err: err}
	}
	return wait, nil
}

// pause waits d, or until ctx ends: then it returns ctx's status
// (codes.Canceled or codes.DeadlineExceeded).
func (c *clientConfig) pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if err := c.Sleep(ctx, d); err != nil {
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
