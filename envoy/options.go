package envoy

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice/decide"
)

// Option configures [New]: the decide package's options (the budget,
// observer, logger, instances and header modes: [decide.WithBudget],
// [decide.WithHeaders], ...), or the service's own below. The header
// modes select the rate-limit fields a response asks Envoy to add
// (response_headers_to_add).
type Option = decide.Option

type config struct {
	unknownDomain Unmatched
	registerer    prometheus.Registerer
	// dynamicMetadata: see WithDynamicMetadata.
	dynamicMetadata bool
}

// WithUnknownDomain sets how the descriptors of a domain the mapping does
// not define are answered. Default: [UnmatchedOK], as envoyproxy/ratelimit
// answers them.
func WithUnknownDomain(u Unmatched) Option {
	return decide.Setting(func(c *config) error {
		if u > UnmatchedOverLimit {
			return errors.New("WithUnknownDomain: unknown value " + u.String())
		}
		c.unknownDomain = u
		return nil
	})
}

// WithRegisterer registers the service's own metrics with reg: requests
// by domain and overall code, descriptors by how the mapping answered
// them, and the time each request took (see the package documentation).
// The rules' decisions and the store's calls are the observer's (see
// [decide.WithObserver]). Default: not registered.
func WithRegisterer(reg prometheus.Registerer) Option {
	return decide.Setting(func(c *config) error {
		if reg == nil {
			return errors.New("WithRegisterer: nil registerer")
		}
		c.registerer = reg
		return nil
	})
}
