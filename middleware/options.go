package middleware

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/headers"
)

// DefaultBudget is the default latency budget of a store call.
const DefaultBudget = decide.DefaultBudget

// Option configures a [Limiter].
type Option interface {
	apply(*config) error
}

type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

type config struct {
	headers headers.Mode
	deny    DenyHandler
	onError ErrorHandler
	logger  *slog.Logger
	now     func() time.Time
	// decide are the options of the limiter's decider: the budget, the
	// observer and the instances.
	decide []decide.Option
}

func buildConfig(opts []Option) (config, error) {
	c := config{
		headers: headers.Default,
		deny:    WriteDenial,
		onError: WriteError,
		logger:  slog.Default(),
		now:     time.Now,
	}
	for _, o := range opts {
		if err := o.apply(&c); err != nil {
			return c, err
		}
	}
	return c, nil
}

// WithHeaders selects the rate-limit header fields. Default:
// [headers.Default] (the IETF draft's RateLimit and RateLimit-Policy).
// [headers.None] sends none (Retry-After is still sent on 429 and 503).
func WithHeaders(m headers.Mode) Option {
	return optionFunc(func(c *config) error { c.headers = m; return nil })
}

// WithBudget sets the latency budget: the deadline of each store call,
// counted from when the limiter starts it. When it passes the rules' on_fail
// policies decide. Default: [DefaultBudget], 50 ms. It must be positive.
//
// The call's context has the request's values, and its deadline is the
// budget's, or the request's own if that is earlier; go-redis gives it to
// the socket. The context is done at that deadline, or up to a sixteenth
// of the budget after it: calls share one timer per such tick, which is
// cheaper than a timer per call (budgets over an hour get a timer per
// call). A
// request cancelled during its call (its client gone) does not cut the
// call short; a request already done before it is given its own done
// context, which redisstore refuses without sending.
//
// The calls of an in-process store ([sluice.InProcessStore], such as
// [github.com/sluicehq/sluice/store/memstore.Store]) get no deadline: they
// do no I/O.
func WithBudget(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: middleware: budget %v: must be positive", sluice.ErrInvalidConfig, d)
		}
		c.decide = append(c.decide, decide.WithBudget(d))
		return nil
	})
}

// DenyHandler answers a request a rule refused. When it runs, the
// rate-limit headers, Retry-After and Cache-Control are already set; it
// writes the status and the body.
type DenyHandler func(w http.ResponseWriter, r *http.Request, d Denial)

// WithDenyHandler replaces the default 429 response, [WriteDenial].
func WithDenyHandler(h DenyHandler) Option {
	return optionFunc(func(c *config) error {
		if h == nil {
			return fmt.Errorf("%w: middleware: nil deny handler", sluice.ErrInvalidConfig)
		}
		c.deny = h
		return nil
	})
}

// ErrorHandler answers a request the limiter could not decide: a rule
// could not key it (err wraps [ErrKeyFailed]), or the store failed and a rule's
// policy is closed (err wraps [ErrStoreFailed] and the store's error).
type ErrorHandler func(w http.ResponseWriter, r *http.Request, err error)

// WithErrorHandler replaces the default error responses, [WriteError].
func WithErrorHandler(h ErrorHandler) Option {
	return optionFunc(func(c *config) error {
		if h == nil {
			return fmt.Errorf("%w: middleware: nil error handler", sluice.ErrInvalidConfig)
		}
		c.onError = h
		return nil
	})
}

// WithObserver reports every rule's decision to o (see [sluice.Decision]).
// Without it, a store that is a [sluice.ObserverSource] supplies the
// observer: a redisstore.Store whose Config.Events is a metrics.Collector
// reports decisions to that collector, with nothing to set here.
// WithObserver(nil) changes nothing.
func WithObserver(o sluice.Observer) Option {
	return optionFunc(func(c *config) error {
		if o != nil {
			c.decide = append(c.decide, decide.WithObserver(o))
		}
		return nil
	})
}

// WithLogger sets where store failures are logged. Default: [slog.Default].
// Keys and identities are never logged.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) error {
		if l == nil {
			return fmt.Errorf("%w: middleware: nil logger", sluice.ErrInvalidConfig)
		}
		c.logger = l
		return nil
	})
}

// WithClock sets the clock the headers are written by: X-RateLimit-Reset
// is a Unix time. Default: [sluice.SystemClock]. Tests that step a fake
// store clock pass the same clock here.
func WithClock(c sluice.Clock) Option {
	return optionFunc(func(cfg *config) error {
		if c == nil {
			return fmt.Errorf("%w: middleware: nil clock", sluice.ErrInvalidConfig)
		}
		cfg.now = c.Now
		return nil
	})
}

// WithInstances tells the limiter how many instances of the service share
// the store. A rule whose on_fail is local (rules.FailLocal, the default)
// decides, while the store fails, from an in-process bucket holding its
// limit divided by the number of instances (at least 1 per period), so the
// instances together stay near the limit. Default: the count of a store
// that counts the instances sharing it ([sluice.InstanceCounter], as the
// Redis store does), else 1. It must be at least 1.
func WithInstances(n int) Option {
	return optionFunc(func(c *config) error {
		if n < 1 {
			return fmt.Errorf("%w: middleware: instances %d: must be at least 1", sluice.ErrInvalidConfig, n)
		}
		c.decide = append(c.decide, decide.WithInstances(n))
		return nil
	})
}
