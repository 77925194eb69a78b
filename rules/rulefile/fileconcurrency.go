package rulefile

import (
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/yamlkit"
	"github.com/sluicehq/sluice/rules"
	"go.yaml.in/yaml/v3"
)

var concurrencyFields = []string{"max", "hold"}

// notWithConcurrency are the rule fields a concurrency rule refuses: they
// belong to rate limits.
var notWithConcurrency = []string{"limit", "algorithm", "cost", "max_cost", "max_limit", "lease", "hot_keys", "colocate", "shadow", "count", "penalty"}

// concurrency reads a rule's concurrency limit into r, in place of a
// limit (see [rules.Concurrency]):
//
//	concurrency: {max: 5, hold: 60s}   # at most 5 in flight per identity
//
// The file's default algorithm does not apply to it; a default shadow
// flag refuses it (see rule).
func (d *decoder) concurrency(n *yaml.Node, f map[string]*yaml.Node, r *rules.Rule) error {
	for _, name := range notWithConcurrency {
		if v, ok := f[name]; ok {
			return d.Failf(yamlkit.Deref(v), name, "not with concurrency: a concurrency rule counts requests in flight, not a rate; leave %s out", name)
		}
	}
	fields, err := d.Mapping(n, "concurrency", concurrencyFields...)
	if err != nil {
		return err
	}
	v := yamlkit.Deref(n)
	c := &rules.Concurrency{}
	if c.Max, err = d.slots(v, fields["max"], "concurrency.max"); err != nil {
		return err
	}
	h := fields["hold"]
	if h == nil {
		return d.Failf(v, "concurrency.hold", "missing: how long a slot outlives a process that died holding it, such as 60s")
	}
	if hv := yamlkit.Deref(h); hv.Kind == yaml.ScalarNode && (hv.Tag == "!!int" || hv.Tag == "!!float") {
		return d.Failf(hv, "concurrency.hold", "%s has no unit: write a duration such as %ss", yamlkit.Quote(hv.Value), hv.Value)
	}
	s, err := d.Str(h, "concurrency.hold")
	if err != nil {
		return err
	}
	if c.Hold, err = parsePeriod(s); err != nil {
		return d.Failf(yamlkit.Deref(h), "concurrency.hold", "%s: %v", yamlkit.Quote(s), err)
	}
	if c.Hold < rules.MinHold || c.Hold > rules.MaxHold {
		return d.Failf(yamlkit.Deref(h), "concurrency.hold", "%s: from 1s to 1d", yamlkit.Quote(s))
	}
	r.Concurrency, r.Algorithm, r.Cost = c, sluice.TokenBucket, 1
	return nil
}

// slots reads a concurrency limit's max (or an override's): from 1 to
// [sluice.MaxLogLimit].
func (d *decoder) slots(parent, n *yaml.Node, path string) (int64, error) {
	if n == nil {
		return 0, d.Failf(parent, path, "missing: how many requests of one identity may be in flight at once")
	}
	m, err := d.optInt(n, path, 0, 1)
	if err != nil {
		return 0, err
	}
	if m > sluice.MaxLogLimit {
		return 0, d.Failf(yamlkit.Deref(n), path, "%d: at most %d", m, sluice.MaxLogLimit)
	}
	return m, nil
}

// concurrencyOverride reads the limit of an override of a concurrency
// rule: its max, with the rule's hold.
func (d *decoder) concurrencyOverride(n *yaml.Node, f map[string]*yaml.Node, path string, r *rules.Rule) (sluice.Limit, error) {
	if v, ok := f["limit"]; ok {
		return sluice.Limit{}, d.Failf(yamlkit.Deref(v), path+".limit", "an override of a concurrency rule gives its max, not a limit")
	}
	m, err := d.slots(n, f["max"], path+".max")
	if err != nil {
		return sluice.Limit{}, err
	}
	return sluice.Per(m, r.Concurrency.Hold), nil
}
