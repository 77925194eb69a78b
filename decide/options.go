package decide

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
)

// DefaultBudget is the default latency budget of a store call.
const DefaultBudget = 50 * time.Millisecond

// Option configures a [Decider], and so the middleware, the gRPC
// interceptors and the Envoy service built on one: they take decide's
// options beside their own (deny and error handlers, pushback, metadata),
// which they make with [Setting]. The With functions return them.
type Option interface{ option() }

// setting is an option that sets a T: the decider's configuration (a
// config), or a front end's (see Setting).
type setting[T any] func(*T) error

func (setting[T]) option() {}

type config struct {
	budget    time.Duration
	observer  sluice.Observer
	logger    *slog.Logger
	instances int
	headers   headers.Mode
	now       func() time.Time
	clock     sluice.Clock // WithClock's; nil: the system clock
}

// Setting returns an option of a front end's own, one that sets what set
// sets in the front end's configuration, a T: the front end passes the
// options it is given to [NewFrontEnd], which applies those made for a T.
// An error set returns is a configuration error of the front end's.
func Setting[T any](set func(*T) error) Option { return setting[T](set) }

// New returns a decider on store. A nil store, or an invalid option, is a
// [*ConfigError] wrapping [sluice.ErrInvalidConfig]; so is an option of a
// front end's own ([Setting]).
func New(store sluice.Store, opts ...Option) (*Decider, error) {
	return NewFrontEnd[struct{}]("decide", store, nil, opts)
}

// NewFrontEnd is [New] for a front end named pkg whose configuration is
// own: it applies to own, in order, the options of opts made by [Setting]
// for a T, and the others to the decider. A nil store, a nil option, an
// invalid one and one made for another front end are errors wrapping
// [sluice.ErrInvalidConfig], whose text starts with pkg.
func NewFrontEnd[T any](pkg string, store sluice.Store, own *T, opts []Option) (*Decider, error) {
	if store == nil {
		return nil, invalidConfig(pkg, "New: nil store")
	}
	cfg := config{budget: DefaultBudget, logger: slog.Default(), headers: headers.Default, now: time.Now}
	for _, o := range opts {
		var err error
		switch o := o.(type) {
		case nil:
			return nil, invalidConfig(pkg, "nil Option")
		case setting[config]:
			err = o(&cfg)
		case setting[T]:
			if own == nil {
				return nil, invalidConfig(pkg, "an option of a front end, not of the decider")
			}
			err = o(own)
		default:
			return nil, invalidConfig(pkg, "an option of another front end")
		}
		if ce, ok := errors.AsType[*ConfigError](err); ok {
			return nil, invalidConfig(pkg, "%s", ce.Msg)
		}
		if err != nil && errors.Is(err, sluice.ErrInvalidConfig) {
			return nil, err // the front end's own error
		}
		if err != nil {
			return nil, invalidConfig(pkg, "%v", err)
		}
	}
	return newDecider(store, cfg), nil
}

// ConfigError is an argument or option a constructor refuses: [New]'s,
// or a front end's. It wraps [sluice.ErrInvalidConfig].
type ConfigError struct {
	// Package names the package whose constructor refused it, such as
	// "middleware"; "" is decide.
	Package string
	// Msg says what is wrong, naming the argument or the option.
	Msg string
}

// Error returns the message, prefixed with the package's name.
func (e *ConfigError) Error() string {
	if e.Package == "" {
		return "decide: " + e.Msg
	}
	return e.Package + ": " + e.Msg
}

// Unwrap returns [sluice.ErrInvalidConfig].
func (e *ConfigError) Unwrap() error { return sluice.ErrInvalidConfig }

func invalidConfig(pkg, format string, args ...any) error {
	return &ConfigError{Package: pkg, Msg: fmt.Sprintf(format, args...)}
}

// WithBudget sets the latency budget: the deadline of each store call,
// counted from when it starts, or the request's own deadline if that is
// earlier. When it passes, the rules' on_fail policies decide. Default:
// [DefaultBudget], 50 ms. It must be positive.
//
// The call's context has the request's values, and go-redis gives its
// deadline to the socket. A request cancelled during its call (its client
// gone) does not cut the call short, which would make the call's outcome
// ambiguous; a request already done before its call is given its own done
// context, which a store refuses at once (redisstore does, without
// sending). Calls share one timer per sixteenth of the budget, which is
// cheaper than a timer per call: a call's context is done at its
// deadline, or up to a sixteenth of the budget after it (budgets over an
// hour get a timer per call). The calls of an in-process store
// ([sluice.InProcessStore], such as memstore's) get no deadline: they do
// no I/O.
func WithBudget(d time.Duration) Option {
	return setting[config](func(c *config) error {
		if d <= 0 {
			return invalidConfig("", "WithBudget: %v: must be positive", d)
		}
		c.budget = d
		return nil
	})
}

// WithObserver reports every rule's decision, and every store call, to o
// (see [sluice.Observer] and [sluice.StoreCallObserver]). Default: the
// store's own observer when it has one ([sluice.ObserverSource]: a Redis
// store whose Config.Events is a metrics collector), else none.
func WithObserver(o sluice.Observer) Option {
	return setting[config](func(c *config) error {
		if o == nil {
			return invalidConfig("", "WithObserver: nil observer")
		}
		c.observer = o
		return nil
	})
}

// WithLogger sets where store failures, refusals, bypass uses, keys run
// before routing and lost after-the-fact charges are logged, each kind at
// most once a second. Default: [slog.Default]. Keys and identities are
// never logged.
func WithLogger(l *slog.Logger) Option {
	return setting[config](func(c *config) error {
		if l == nil {
			return invalidConfig("", "WithLogger: nil logger")
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
	return setting[config](func(c *config) error {
		if n < 1 {
			return invalidConfig("", "WithInstances: %d: must be at least 1", n)
		}
		c.instances = n
		return nil
	})
}

// WithHeaders selects the rate-limit fields an outcome carries
// ([Outcome.Fields]): the HTTP middleware sends them as response headers,
// the gRPC interceptors as header metadata named in lower case, the Envoy
// service as headers for Envoy to add. Default: [headers.Default] (the
// IETF draft's RateLimit and RateLimit-Policy). [headers.None] sends none;
// Retry-After is still sent with a refusal.
func WithHeaders(m headers.Mode) Option {
	return setting[config](func(c *config) error {
		if _, err := m.MarshalText(); err != nil {
			return invalidConfig("", "WithHeaders: %v", err)
		}
		c.headers = m
		return nil
	})
}

// WithClock sets the clock the rate-limit fields are written by:
// X-RateLimit-Reset is a Unix time. Default: the system clock
// ([sluice.SystemClock]). Tests that step a fake store clock pass the same
// clock here. A clock that also has timers (a Timer(d) method, as
// storetest.Clock has) times the refreshes of concurrency slots too. The
// local fallback (on_fail: local) decides on a clock given here as well,
// but on the system clock's monotonic reading when it is [sluice.SystemClock]
// or none is given.
func WithClock(c sluice.Clock) Option {
	return setting[config](func(cfg *config) error {
		if c == nil {
			return invalidConfig("", "WithClock: nil clock")
		}
		cfg.now, cfg.clock = c.Now, c
		return nil
	})
}
