package envoy

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/headers"
)

// DefaultBudget is how long a store call may take when [WithBudget] is not
// given: past it the store counts as failed, and each rule applies its
// on_fail.
const DefaultBudget = decide.DefaultBudget

// Option configures [New]. The With functions return them.
type Option interface {
	apply(*config) error
}

type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

type config struct {
	headers       headers.Mode
	unknownDomain Unmatched
	registerer    prometheus.Registerer
	now           func() time.Time
	// dynamicMetadata: see WithDynamicMetadata.
	dynamicMetadata bool
	// decide are the options of the service's decider: the budget, the
	// observer, the logger and the instances.
	decide []decide.Option
}

func buildConfig(opts []Option) (config, error) {
	c := config{headers: headers.Default, now: time.Now}
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

// WithBudget sets how long a store call may take before the store counts
// as failed and each rule applies its on_fail. The call also ends with
// the gRPC call's deadline, when Envoy's is earlier. Default:
// [DefaultBudget]. A store that decides in process gets no budget.
func WithBudget(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d <= 0 {
			return invalidConfig("WithBudget: " + d.String() + ": must be positive")
		}
		c.decide = append(c.decide, decide.WithBudget(d))
		return nil
	})
}

// WithHeaders selects the rate-limit header fields a response asks Envoy
// to add (response_headers_to_add); [headers.None] adds none, though a
// refused request still gets Retry-After. Default: [headers.Default], the
// IETF draft's RateLimit-Policy and RateLimit.
func WithHeaders(m headers.Mode) Option {
	return optionFunc(func(c *config) error {
		if _, err := m.MarshalText(); err != nil {
			return invalidConfig("WithHeaders: " + err.Error())
		}
		c.headers = m
		return nil
	})
}

// WithObserver reports every rule's decision, and every store call, to o
// (the metrics package's Collector is one). Default: the store's own
// observer, when its configuration names one ([sluice.ObserverSource]),
// else none.
func WithObserver(o sluice.Observer) Option {
	return optionFunc(func(c *config) error {
		if o == nil {
			return invalidConfig("WithObserver: nil observer")
		}
		c.decide = append(c.decide, decide.WithObserver(o))
		return nil
	})
}

// WithLogger sets where store failures and refused requests are logged,
// sampled. Default: [slog.Default].
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) error {
		if l == nil {
			return invalidConfig("WithLogger: nil logger")
		}
		c.decide = append(c.decide, decide.WithLogger(l))
		return nil
	})
}

// WithInstances sets how many instances of the service share the store,
// so that a rule whose on_fail is local decides, while the store fails,
// on its share of the limit: the limit divided by n. Default: as many as
// the store counts ([sluice.InstanceCounter]), else 1.
func WithInstances(n int) Option {
	return optionFunc(func(c *config) error {
		if n < 1 {
			return invalidConfig("WithInstances: must be at least 1")
		}
		c.decide = append(c.decide, decide.WithInstances(n))
		return nil
	})
}

// WithUnknownDomain sets how the descriptors of a domain the mapping does
// not define are answered. Default: [UnmatchedOK], as envoyproxy/ratelimit
// answers them.
func WithUnknownDomain(u Unmatched) Option {
	return optionFunc(func(c *config) error {
		if u > UnmatchedOverLimit {
			return invalidConfig("WithUnknownDomain: unknown value " + u.String())
		}
		c.unknownDomain = u
		return nil
	})
}

// WithRegisterer registers the service's own metrics with reg: requests
// by domain and overall code, descriptors by how the mapping answered
// them, and the time each request took (see the package documentation).
// The rules' decisions and the store's calls are the observer's (see
// [WithObserver]). Default: not registered.
func WithRegisterer(reg prometheus.Registerer) Option {
	return optionFunc(func(c *config) error {
		if reg == nil {
			return invalidConfig("WithRegisterer: nil registerer")
		}
		c.registerer = reg
		return nil
	})
}
