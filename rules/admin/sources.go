package admin

import (
	"fmt"
	"slices"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/rules"
)

// WithRules adds the rules of more sources whose buckets live in the
// handler's store: those of an application's other limiters, so that one
// handler covers them all. With chi, one limiter in r.Use for every route
// and one in r.With for the login route:
//
//	h, err := admin.New(store, perKey, admin.WithRules(login))
//
// A rule in two sources (the same *rules.Set passed twice, or the same
// rule in two sets) is one bucket, inspected and reset once. It refuses a
// nil source.
func WithRules(srcs ...rules.Source) Option {
	return optionFunc(func(c *config) error {
		for _, src := range srcs {
			if src == nil || isNilSet(src) {
				return fmt.Errorf("%w: admin: WithRules: nil rule source", sluice.ErrInvalidConfig)
			}
		}
		c.srcs = append(c.srcs, srcs...)
		return nil
	})
}

// rules returns the rules of every source, each set once.
func (h *handler) rules() []rules.Rule {
	var all []rules.Rule
	var seen []*rules.Set
	for _, src := range h.srcs {
		set := src.Current()
		if set == nil || slices.Contains(seen, set) {
			continue
		}
		seen = append(seen, set)
		all = append(all, set.Rules()...)
	}
	return all
}

// isNilSet reports a nil *rules.Set passed as a rules.Source.
func isNilSet(src rules.Source) bool {
	set, ok := src.(*rules.Set)
	return ok && set == nil
}
