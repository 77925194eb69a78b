package rulefile

import (
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/ident"
	"github.com/sluicehq/sluice/internal/yamlkit"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"go.yaml.in/yaml/v3"
)

// rule decodes the i-th (0-based) entry of the rules section, and reports
// whether it is enabled. A disabled rule is checked all the same.
func (d *decoder) rule(n *yaml.Node, i int, defs fileDefaults, names map[string]int) (rules.Rule, bool, error) {
	d.enter("rule", i+1, peekName(n))
	f, err := d.Mapping(n, "", ruleFields...)
	if err != nil {
		return rules.Rule{}, false, err
	}
	n = yamlkit.Deref(n)
	r := rules.Rule{Algorithm: defs.algorithm, OnFail: defs.onFail, Shadow: defs.shadow}
	if r.Name, err = d.entryName(n, f, names); err != nil {
		return rules.Rule{}, false, err
	}
	d.name = r.Name
	if r.Key, err = d.key(n, f["key"]); err != nil {
		return rules.Rule{}, false, err
	}
	if r.Colocate, err = d.colocate(f["colocate"], r.Key.Kind()); err != nil {
		return rules.Rule{}, false, err
	}
	if c, ok := f["concurrency"]; ok {
		err = d.concurrency(c, f, &r)
	} else {
		err = d.ruleLimit(n, f, &r)
	}
	if err != nil {
		return rules.Rule{}, false, err
	}
	enabled, err := d.ruleFlags(f, defs, &r)
	if err != nil {
		return rules.Rule{}, false, err
	}
	if r.Concurrency != nil && r.Shadow {
		return rules.Rule{}, false, d.Failf(yamlkit.Deref(f["concurrency"]), "concurrency", "the file's defaults make every rule shadow, and a concurrency rule cannot be one: its slots are held in earnest")
	}
	m := &matcher{env: d.env}
	if err := d.match(f["match"], f["plans"], m); err != nil {
		return rules.Rule{}, false, err
	}
	r.Match = m.fn()
	if err := d.leasePolicy(f, &r); err != nil {
		return rules.Rule{}, false, err
	}
	if err := d.count(f["count"], &r); err != nil {
		return rules.Rule{}, false, err
	}
	if err := d.penalty(f["penalty"], &r); err != nil {
		return rules.Rule{}, false, err
	}
	if err := d.quota(n, f, &r); err != nil {
		return rules.Rule{}, false, err
	}
	if err := r.Validate(); err != nil { // the checks above should have caught it
		return rules.Rule{}, false, d.Failf(n, "", "%w", err)
	}
	return r, enabled, nil
}

// ruleLimit reads a rule's algorithm, limit, cost and max_cost into r.
func (d *decoder) ruleLimit(n *yaml.Node, f map[string]*yaml.Node, r *rules.Rule) error {
	var err error
	if r.Algorithm, err = d.entryAlgorithm(f, r.Algorithm); err != nil {
		return err
	}
	lim, err := d.limit(n, f["limit"], r.Algorithm)
	if err != nil {
		return err
	}
	r.Limit = lim.Limit
	if r.Cost, err = d.optInt(f["cost"], "cost", 1, 1); err != nil {
		return err
	}
	if r.MaxCost, err = d.maxCost(f["max_cost"], r.Cost); err != nil {
		return err
	}
	return d.fits(lim, r.Cost, f["cost"])
}

// ruleFlags reads a rule's on_fail, expose and shadow into r, and returns
// its enabled field.
func (d *decoder) ruleFlags(f map[string]*yaml.Node, defs fileDefaults, r *rules.Rule) (enabled bool, err error) {
	if r.OnFail, err = d.onFail(f["on_fail"], "on_fail", r.OnFail); err != nil {
		return false, err
	}
	expose, err := d.optBool(f["expose"], "expose", defs.expose)
	if err != nil {
		return false, err
	}
	r.Hidden = !expose
	if r.Shadow, err = d.optBool(f["shadow"], "shadow", r.Shadow); err != nil {
		return false, err
	}
	required, err := d.optBool(f["key_required"], "key_required", false)
	if err != nil {
		return false, err
	}
	if required {
		r.Key = r.Key.Required()
	}
	return d.optBool(f["enabled"], "enabled", true)
}

// key reads a rule's key field.
func (d *decoder) key(rule, n *yaml.Node) (keyfunc.Key, error) {
	if n == nil {
		return keyfunc.Key{}, d.Failf(rule, "key", "missing (one of %s, or a name registered in LoadConfig.Keys)", "ip, user, api_key, user_endpoint, endpoint, header:NAME, global")
	}
	s, err := d.Str(n, "key")
	if err != nil {
		return keyfunc.Key{}, err
	}
	k, err := d.env.keySpec(s)
	if err != nil {
		return keyfunc.Key{}, d.Failf(yamlkit.Deref(n), "key", "%v", err)
	}
	return k, nil
}

// maxCost reads max_cost, which must not be below the cost.
func (d *decoder) maxCost(n *yaml.Node, cost int64) (int64, error) {
	if n == nil {
		return 0, nil
	}
	v, err := d.Integer(n, "max_cost")
	if err != nil {
		return 0, err
	}
	if v < cost {
		return 0, d.Failf(yamlkit.Deref(n), "max_cost", "%d is below the cost %d", v, cost)
	}
	return v, nil
}

// fits checks that a request of the rule's cost can ever pass.
func (d *decoder) fits(lim fileLimit, cost int64, costNode *yaml.Node) error {
	capacity := lim.Capacity()
	switch {
	case cost <= capacity:
		return nil
	case lim.burst != nil:
		return d.Failf(yamlkit.Deref(lim.burst), "limit.burst", "%d is below the cost %d: no request could ever pass", capacity, cost)
	default:
		return d.Failf(yamlkit.Deref(costNode), "cost", "%d exceeds the rate %d, the capacity when no burst is given: no request could ever pass", cost, capacity)
	}
}

// fileLimit is a decoded limit and the nodes of its fields, for errors
// found later.
type fileLimit struct {
	sluice.Limit
	burst *yaml.Node // nil when not given
}

// colocate reads a rule's colocate field: the key kind whose identity the
// rule's buckets share a slot with (see [rules.Rule.Colocate]), such as
// user. A rule keyed by ip, endpoint or global cannot be colocated, and
// nothing can be colocated by those kinds: their buckets must spread over
// the cluster.
func (d *decoder) colocate(n *yaml.Node, kind string) (keyfunc.Key, error) {
	if n == nil {
		return keyfunc.Key{}, nil
	}
	s, err := d.Str(n, "colocate")
	if err != nil {
		return keyfunc.Key{}, err
	}
	if !ident.Colocatable(kind) {
		return keyfunc.Key{}, d.Failf(yamlkit.Deref(n), "colocate", "a rule keyed by %s cannot be colocated: its buckets must spread over the cluster", kind)
	}
	k, err := d.env.keySpec(s)
	if err != nil {
		return keyfunc.Key{}, d.Failf(yamlkit.Deref(n), "colocate", "%v", err)
	}
	if !ident.Colocatable(k.Kind()) {
		return keyfunc.Key{}, d.Failf(yamlkit.Deref(n), "colocate", "cannot colocate by %s: every bucket of the service would share one slot; colocate by an identity such as user or api_key", k.Kind())
	}
	return k, nil
}
