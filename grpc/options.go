package sluicegrpc

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/headers"
)

// DefaultBudget is the default latency budget of a store call.
const DefaultBudget = decide.DefaultBudget

// Option configures a [Limiter]. The With functions return them.
type Option interface {
	apply(*config) error
}

type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

type config struct {
	headers  headers.Mode
	deny     DenyHandler
	onError  ErrorHandler
	logger   *slog.Logger
	now      func() time.Time
	known    func(string) bool
	pushback bool
	// decide are the options of the limiter's decider: the budget, the
	// observer and the instances.
	decide []decide.Option
}

func buildConfig(opts []Option) (config, error) {
	c := config{
		headers:  headers.Default,
		deny:     DenialStatus,
		onError:  ErrorStatus,
		logger:   slog.Default(),
		now:      time.Now,
		pushback: true,
	}
	for _, o := range opts {
		if o == nil {
			return c, invalidConfig("nil Option")
		}
		if err := o.apply(&c); err != nil {
			return c, err
		}
	}
	return c, nil
}

// WithHeaders selects the rate-limit fields sent as response header
// metadata, named as the HTTP fields are, in lower case ("ratelimit-policy",
// "ratelimit", "x-ratelimit-remaining", ...). Default: [headers.Default]
// (the IETF draft's RateLimit and RateLimit-Policy). [headers.None] sends
// none ("retry-after" is still sent with a refusal).
func WithHeaders(m headers.Mode) Option {
	return optionFunc(func(c *config) error {
		if _, err := m.MarshalText(); err != nil {
			return invalidConfig("WithHeaders: %v", err)
		}
		c.headers = m
		return nil
	})
}

// WithBudget sets the latency budget: the deadline of each store call,
// counted from when the limiter starts it, or the call's own deadline if
// that is earlier. When it passes, the rules' on_fail policies decide.
// Default: [DefaultBudget], 50 ms. It must be positive. A call cancelled
// by its client during the store call does not cut the store call short.
// The calls of an in-process store ([sluice.InProcessStore]) get no
// deadline: they do no I/O.
func WithBudget(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d <= 0 {
			return invalidConfig("WithBudget: %v: must be positive", d)
		}
		c.decide = append(c.decide, decide.WithBudget(d))
		return nil
	})
}

// DenyHandler returns the error a call the rules refused ends with. The
// default is [DenialStatus].
type DenyHandler func(ctx context.Context, d Denial) error

// WithDenyHandler replaces the default refusal, [DenialStatus].
func WithDenyHandler(h DenyHandler) Option {
	return optionFunc(func(c *config) error {
		if h == nil {
			return invalidConfig("WithDenyHandler: nil handler")
		}
		c.deny = h
		return nil
	})
}

// ErrorHandler returns the error a call the limiter could not decide ends
// with: a rule could not key it (err wraps [ErrKeyFailed]), its context
// set a negative cost ([ErrInvalidCost]), or the store failed and a rule's
// policy is closed ([ErrStoreFailed] and the store's error; retry is how
// long the store expects to stay unavailable, at least a second). The
// default is [ErrorStatus]. It must return a status error and never show
// err's text to the client.
type ErrorHandler func(ctx context.Context, err error, retry time.Duration) error

// WithErrorHandler replaces the default error statuses, [ErrorStatus].
func WithErrorHandler(h ErrorHandler) Option {
	return optionFunc(func(c *config) error {
		if h == nil {
			return invalidConfig("WithErrorHandler: nil handler")
		}
		c.onError = h
		return nil
	})
}

// WithObserver reports every rule's decision, and every store call, to o
// (see [sluice.Observer] and [sluice.StoreCallObserver]). Default: the
// store's own observer when its configuration names one
// ([sluice.ObserverSource]: a Redis store whose Config.Events is a
// metrics collector), else none.
func WithObserver(o sluice.Observer) Option {
	return optionFunc(func(c *config) error {
		if o == nil {
			return invalidConfig("WithObserver: nil observer")
		}
		c.decide = append(c.decide, decide.WithObserver(o))
		return nil
	})
}

// WithLogger sets where store failures, refusals and bypass uses are
// logged, each at most once a second. Default: [slog.Default]. Keys and
// identities are never logged.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) error {
		if l == nil {
			return invalidConfig("WithLogger: nil logger")
		}
		c.logger = l
		return nil
	})
}

// WithClock sets the clock the rate-limit fields are written by:
// x-ratelimit-reset is a Unix time. Default: the system clock. Tests that
// step a fake store clock pass the same clock here.
func WithClock(c sluice.Clock) Option {
	return optionFunc(func(cfg *config) error {
		if c == nil {
			return invalidConfig("WithClock: nil clock")
		}
		cfg.now = c.Now
		return nil
	})
}

// WithInstances tells the limiter how many instances of the service share
// the store: a rule whose on_fail is local decides, while the store fails,
// on its limit divided by n (at least 1 per period). Default: the count of
// a store that counts them ([sluice.InstanceCounter]), else 1. It must be
// at least 1.
func WithInstances(n int) Option {
	return optionFunc(func(c *config) error {
		if n < 1 {
			return invalidConfig("WithInstances: %d: must be at least 1", n)
		}
		c.decide = append(c.decide, decide.WithInstances(n))
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
	return optionFunc(func(c *config) error {
		if known == nil {
			return invalidConfig("WithKnownMethods: nil function")
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
	return optionFunc(func(c *config) error { c.pushback = false; return nil })
}
