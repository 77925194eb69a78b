package envoy

import (
	"slices"
	"strings"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/yamlkit"
	"github.com/sluicehq/sluice/rules"
	"go.yaml.in/yaml/v3"
)

// rateLimit decodes a descriptor's rate_limit. full is the descriptor's
// path of names, the limit's name unless it has one.
func (d *decoder) rateLimit(n *yaml.Node, path, full string, shadow bool) (*limit, error) {
	if err := d.refuseConcurrency(n, path); err != nil {
		return nil, err
	}
	f, err := d.Mapping(n, path, rateLimitFields...)
	if err != nil {
		return nil, err
	}
	lim := &limit{}
	if lim.name, err = d.limitName(n, f, path, full); err != nil {
		return nil, err
	}
	if v, ok := f["replaces"]; ok {
		if lim.replaces, err = d.replaces(v, yamlkit.Sub(path, "replaces"), lim.name); err != nil {
			return nil, err
		}
	}
	if v, ok := f["unlimited"]; ok {
		if lim.unlimited, err = d.Boolean(v, yamlkit.Sub(path, "unlimited")); err != nil {
			return nil, err
		}
	}
	if lim.unlimited {
		for _, name := range []string{"unit", "requests_per_unit", "algorithm", "burst", "on_fail", "expose"} {
			if v, ok := f[name]; ok {
				return nil, d.Failf(yamlkit.Deref(v), yamlkit.Sub(path, name), "not with unlimited: true (an unlimited descriptor is never counted)")
			}
		}
		return lim, nil
	}
	u, rn, err := d.unitRate(n, f, path)
	if err != nil {
		return nil, err
	}
	lim.unit, lim.rpu = u.unit, uint32(rn.rpu)
	if rn.rpu == 0 {
		// envoyproxy/ratelimit's way to ban a value: every request is
		// over the limit, and none is counted.
		for _, name := range []string{"algorithm", "burst", "on_fail", "expose"} {
			if v, ok := f[name]; ok {
				return nil, d.Failf(yamlkit.Deref(v), yamlkit.Sub(path, name), "not with requests_per_unit: 0 (it refuses every request and counts none)")
			}
		}
		lim.banned, lim.shadow = true, shadow
		return lim, nil
	}
	r, err := d.limitRule(f, path, lim.name, u, rn, shadow)
	if err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, d.Failf(yamlkit.Deref(n), path, "%v", err)
	}
	d.part.rules = append(d.part.rules, r)
	return lim, nil
}

// rate is a rate_limit's requests_per_unit and its node.
type rate struct {
	node *yaml.Node
	rpu  int64
}

// unitRate decodes a counted rate_limit's unit and requests_per_unit.
func (d *decoder) unitRate(n *yaml.Node, f map[string]*yaml.Node, path string) (unitDef, rate, error) {
	un, ok := f["unit"]
	if !ok {
		return unitDef{}, rate{}, d.Failf(yamlkit.Deref(n), yamlkit.Sub(path, "unit"), "missing (second, minute, hour, day, week, month or year), or set unlimited: true")
	}
	us, err := d.Str(un, yamlkit.Sub(path, "unit"))
	if err != nil {
		return unitDef{}, rate{}, err
	}
	ui := slices.IndexFunc(units, func(u unitDef) bool { return strings.EqualFold(u.name, us) })
	if ui < 0 {
		return unitDef{}, rate{}, d.Failf(yamlkit.Deref(un), yamlkit.Sub(path, "unit"), "%s is not a unit (second, minute, hour, day, week, month, year)", yamlkit.Quote(us))
	}
	rn, ok := f["requests_per_unit"]
	if !ok {
		return unitDef{}, rate{}, d.Failf(yamlkit.Deref(n), yamlkit.Sub(path, "requests_per_unit"), "missing: how many requests each %s admits", units[ui].name)
	}
	rpu, err := d.IntegerIn(rn, yamlkit.Sub(path, "requests_per_unit"), 0, 1<<32-1)
	if err != nil {
		return unitDef{}, rate{}, err
	}
	return units[ui], rate{node: rn, rpu: rpu}, nil
}

// limitRule builds a counted rate_limit's rule: rn per unit u, with the
// algorithm, burst, on_fail and expose of f, else the document's
// defaults.
func (d *decoder) limitRule(f map[string]*yaml.Node, path, name string, u unitDef, rn rate, shadow bool) (rules.Rule, error) {
	l := sluice.Limit{Rate: rn.rpu, Period: u.d}
	alg, onFail, expose := d.algorithm, d.onFail, d.expose
	var err error
	if v, ok := f["algorithm"]; ok {
		if alg, err = d.algorithmOf(v, yamlkit.Sub(path, "algorithm")); err != nil {
			return rules.Rule{}, err
		}
	}
	if v, ok := f["burst"]; ok {
		if l.Burst, err = d.IntegerIn(v, yamlkit.Sub(path, "burst"), 1, 1<<50); err != nil {
			return rules.Rule{}, err
		}
		if alg != sluice.TokenBucket && l.Burst != l.Rate {
			return rules.Rule{}, d.Failf(yamlkit.Deref(v), yamlkit.Sub(path, "burst"), "only a token_bucket has a burst (%v admits requests_per_unit per unit)", alg)
		}
	}
	if v, ok := f["on_fail"]; ok {
		if onFail, err = d.onFailOf(v, yamlkit.Sub(path, "on_fail")); err != nil {
			return rules.Rule{}, err
		}
	}
	if v, ok := f["expose"]; ok {
		if expose, err = d.Boolean(v, yamlkit.Sub(path, "expose")); err != nil {
			return rules.Rule{}, err
		}
	}
	if err := alg.ValidateLimit(l); err != nil {
		return rules.Rule{}, d.Failf(yamlkit.Deref(rn.node), yamlkit.Sub(path, "requests_per_unit"), "%d per %s with %v: %s", rn.rpu, u.name, alg,
			strings.TrimPrefix(err.Error(), sluice.ErrInvalidLimit.Error()+": "))
	}
	return newRule(name, l, alg, onFail, shadow, !expose), nil
}

// replaces decodes a rate limit's replaces: a list of {name: ...}.
func (d *decoder) replaces(n *yaml.Node, path, own string) ([]string, error) {
	seq, err := d.Sequence(n, path, "a list of {name: ...}")
	if err != nil {
		return nil, err
	}
	if len(seq.Content) == 0 {
		return nil, d.Failf(seq, path, "empty list: leave the field out instead")
	}
	var out []string
	for i, item := range seq.Content {
		p := yamlkit.Elem(path, i)
		f, err := d.Mapping(item, p, "name")
		if err != nil {
			return nil, err
		}
		v, ok := f["name"]
		if !ok {
			return nil, d.Failf(yamlkit.Deref(item), yamlkit.Sub(p, "name"), "missing")
		}
		s, err := d.Str(v, yamlkit.Sub(p, "name"))
		if err != nil {
			return nil, err
		}
		switch {
		case s == "":
			return nil, d.Failf(yamlkit.Deref(v), yamlkit.Sub(p, "name"), "empty")
		case s == own:
			return nil, d.Failf(yamlkit.Deref(v), yamlkit.Sub(p, "name"), "%s is this rate limit's own name", yamlkit.Quote(s))
		}
		d.part.refs = append(d.part.refs, ref{name: s, at: place{file: d.file, field: yamlkit.Sub(p, "name"), line: yamlkit.Deref(v).Line}})
		out = append(out, s)
	}
	return out, nil
}
