package rulefile

import (
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/yamlkit"
	"github.com/sluicehq/sluice/rules"
	"go.yaml.in/yaml/v3"
)

var penaltyFields = []string{"block", "after"}

// penalty reads a rule's penalty into r.Penalty (see [rules.Penalty]):
//
//	penalty: {block: 15m}            # refused once: blocked for 15 minutes
//	penalty: {block: 1h, after: 5}   # 5 refusals within the limit's period
//
// It is read after the rule's limit, algorithm and shadow flag.
func (d *decoder) penalty(n *yaml.Node, r *rules.Rule) error {
	if n == nil {
		return nil
	}
	f, err := d.Mapping(n, "penalty", penaltyFields...)
	if err != nil {
		return err
	}
	v := yamlkit.Deref(n)
	b := f["block"]
	if b == nil {
		return d.Failf(v, "penalty.block", "missing: how long a refused identity is blocked, such as 15m or 1h")
	}
	p := &rules.Penalty{}
	if bv := yamlkit.Deref(b); bv.Kind == yaml.ScalarNode && (bv.Tag == "!!int" || bv.Tag == "!!float") {
		return d.Failf(bv, "penalty.block", "%s has no unit: write a duration such as %sm", yamlkit.Quote(bv.Value), bv.Value)
	}
	s, err := d.Str(b, "penalty.block")
	if err != nil {
		return err
	}
	if p.Block, err = parsePeriod(s); err != nil {
		return d.Failf(yamlkit.Deref(b), "penalty.block", "%s: %v", yamlkit.Quote(s), err)
	}
	switch {
	case p.Block < time.Millisecond:
		return d.Failf(yamlkit.Deref(b), "penalty.block", "%s: must be at least 1ms", yamlkit.Quote(s))
	case p.Block > sluice.MaxBlock:
		return d.Failf(yamlkit.Deref(b), "penalty.block", "%s: at most 30 days (720h)", yamlkit.Quote(s))
	case p.Block%time.Microsecond != 0:
		return d.Failf(yamlkit.Deref(b), "penalty.block", "%s: must be a whole number of microseconds", yamlkit.Quote(s))
	}
	if p.After, err = d.optInt(f["after"], "penalty.after", 1, 1); err != nil {
		return err
	}
	switch {
	case r.Shadow:
		return d.Failf(v, "penalty", "a shadow rule never refuses, so it cannot block: leave penalty out, or shadow")
	case r.Algorithm == sluice.SlidingLog:
		return d.Failf(v, "penalty", "not with the sliding_log algorithm: use sliding_window, fixed_window or token_bucket")
	}
	r.Penalty = p
	return nil
}
