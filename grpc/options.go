package sluicegrpc

import (
	"context"
	"errors"
	"time"

	"github.com/sluicehq/sluice/decide"
)

// Option configures a [Limiter]: the decide package's options (the
// budget, observer, logger, instances, header modes and clock:
// [decide.WithBudget], [decide.WithHeaders], ...), or the interceptors'
// own below. The header modes select the rate-limit fields sent as
// response header metadata, named as the HTTP fields are, in lower case
// ("ratelimit-policy", "ratelimit", "x-ratelimit-remaining", ...).
type Option = decide.Option

type config struct {
	deny     DenyHandler
	onError  ErrorHandler
	known    func(string) bool
	pushback bool
}

// DenyHandler returns the error a call the rules refused ends with. The
// default is [DenialStatus].
type DenyHandler func(ctx context.Context, d Denial) error

// WithDenyHandler replaces the default refusal, [DenialStatus].
func WithDenyHandler(h DenyHandler) Option {
	return decide.Setting(func(c *config) error {
		if h == nil {
			return errors.New("WithDenyHandler: nil handler")
		}
		c.deny = h
		return nil
	})
}

// ErrorHandler returns the error a call the limiter could not decide ends
// with: a rule could not key it (err wraps [decide.ErrKeyFailed]), its
// context set a negative cost ([decide.ErrInvalidCost]), or the store
// failed and a rule's policy is closed ([decide.ErrStoreFailed] and the
// store's error; retry is how long the store expects to stay unavailable,
// at least a second). The default is [ErrorStatus]. It must return a
// status error and never show err's text to the client.
type ErrorHandler func(ctx context.Context, err error, retry time.Duration) error

// WithErrorHandler replaces the default error statuses, [ErrorStatus].
func WithErrorHandler(h ErrorHandler) Option {
	return decide.Setting(func(c *config) error {
		if h == nil {
			return errors.New("WithErrorHandler: nil handler")
		}
		c.onError = h
		return nil
	})
}

// WithKnownMethods names the methods the server serves: a call of any
// other method is keyed, and matched, as the route pattern
// keyfunc.Unmatched ("POST <unmatched>" for an endpoint key) rather than by
// the name its client sent. It matters only on a server with
// grpc.UnknownServiceHandler (a proxy), whose stream interceptors see any
// method name a client invents, which would otherwise mint a bucket per
// name; without one, gRPC answers unknown methods itself, before any
// interceptor runs. known must be safe for concurrent use and fast.
func WithKnownMethods(known func(fullMethod string) bool) Option {
	return decide.Setting(func(c *config) error {
		if known == nil {
			return errors.New("WithKnownMethods: nil function")
		}
		c.known = known
		return nil
	})
}

// WithoutPushback stops the limiter from sending the grpc-retry-pushback-ms
// trailer with a refusal. By default a refusal that can pass later carries
// it, the retry delay in milliseconds (rounded up), so that a client whose
// service config has a retry policy for RESOURCE_EXHAUSTED waits exactly
// that long before gRPC retries the call itself.
func WithoutPushback() Option {
	return decide.Setting(func(c *config) error { c.pushback = false; return nil })
}
