package decide

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice"
)

// DefaultBudget is the default latency budget of a store call.
const DefaultBudget = 50 * time.Millisecond

// Option configures a [Decider]. The With functions return them.
type Option interface {
	apply(*config) error
}

type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

type config struct {
	budget    time.Duration
	observer  sluice.Observer
	logger    *slog.Logger
	instances int
}

func buildConfig(opts []Option) (config, error) {
	c := config{budget: DefaultBudget, logger: slog.Default()}
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

// ConfigError is an argument or option [New] refuses. It wraps
// [sluice.ErrInvalidConfig].
type ConfigError struct {
	// Msg says what is wrong, naming the option.
	Msg string
}

// Error returns the message, prefixed with the package's name.
func (e *ConfigError) Error() string { return "decide: " + e.Msg }

// Unwrap returns [sluice.ErrInvalidConfig].
func (e *ConfigError) Unwrap() error { return sluice.ErrInvalidConfig }

func invalidConfig(format string, args ...any) error {
	return &ConfigError{Msg: fmt.Sprintf(format, args...)}
}

// WithBudget sets the latency budget: the deadline of each store call,
// counted from when it starts, or the request's own deadline if that is
// earlier. When it passes, the rules' on_fail policies decide. Default:
// [DefaultBudget], 50 ms. It must be positive.
//
// The call's context has the request's values. A request cancelled during
// its call (its client gone) does not cut the call short, which would
// make the call's outcome ambiguous; a request already done before its
// call is given its own done context, which a store refuses at once.
// Calls share one timer per sixteenth of the budget, which is cheaper than
// a timer per call: a call's context is done at its deadline, or up to a
// sixteenth of the budget after it (budgets over an hour get a timer per
// call). The calls of an in-process store ([sluice.InProcessStore]) get
// no deadline: they do no I/O.
func WithBudget(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d <= 0 {
			return invalidConfig("WithBudget: %v: must be positive", d)
		}
		c.budget = d
		return nil
	})
}

// WithObserver reports every rule's decision, and every store call, to o
// (see [sluice.Observer] and [sluice.StoreCallObserver]). Default: the
// store's own observer when it has one ([sluice.ObserverSource]), else
// none.
func WithObserver(o sluice.Observer) Option {
	return optionFunc(func(c *config) error {
		if o == nil {
			return invalidConfig("WithObserver: nil observer")
		}
		c.observer = o
		return nil
	})
}

// WithLogger sets where store failures, refusals and bypass uses are
// logged, each kind at most once a second. Default: [slog.Default]. Keys
// and identities are never logged.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) error {
		if l == nil {
			return invalidConfig("WithLogger: nil logger")
		}
		c.logger = l
		return nil
	})
}

// WithInstances tells the decider how many instances of the service share
// the store. A rule whose on_fail is local ([rules.FailLocal], the
// default) decides, while the store fails, from an in-process bucket
// holding its limit divided by n (at least 1 per period), so that the
// instances together stay near the limit. Default: the count of a store
// that counts the instances sharing it ([sluice.InstanceCounter], as the
// Redis store does), else 1. It must be at least 1.
func WithInstances(n int) Option {
	return optionFunc(func(c *config) error {
		if n < 1 {
			return invalidConfig("WithInstances: %d: must be at least 1", n)
		}
		c.instances = n
		return nil
	})
}
