package rulefile

import (
	"errors"
	"strings"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/yamlkit"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"go.yaml.in/yaml/v3"
)

var overrideFields = []string{"identities", "limit", "max"}

// quota reads a rule's overrides and max_limit into r, whose key, limit,
// algorithm and cost are read.
func (d *decoder) quota(n *yaml.Node, f map[string]*yaml.Node, r *rules.Rule) error {
	if v, ok := f["max_limit"]; ok {
		m, err := d.maxLimit(v, r)
		if err != nil {
			return err
		}
		r.MaxLimit = m
	}
	v, ok := f["overrides"]
	if !ok {
		return nil
	}
	if kind := r.Key.Kind(); kind == "global" {
		return d.Failf(yamlkit.Deref(v), "overrides", "a rule keyed by global counts all requests in one bucket: it has no identities to override; change its limit instead")
	}
	seq, err := d.Sequence(v, "overrides", "a list of overrides ({identities: [...], limit: {...}})")
	if err != nil {
		return err
	}
	if len(seq.Content) == 0 {
		return d.Failf(seq, "overrides", "empty list: leave the field out instead")
	}
	lines := map[string]int{} // identities as the key gives them, and their lines
	for i, item := range seq.Content {
		o, err := d.override(item, i, r, lines)
		if err != nil {
			return err
		}
		r.Overrides = append(r.Overrides, o)
	}
	return nil
}

// override reads the i-th (0-based) override of rule r.
func (d *decoder) override(n *yaml.Node, i int, r *rules.Rule, lines map[string]int) (rules.Override, error) {
	path := yamlkit.Elem("overrides", i)
	f, err := d.Mapping(n, path, overrideFields...)
	if err != nil {
		return rules.Override{}, err
	}
	n = yamlkit.Deref(n)
	v, ok := f["identities"]
	if !ok {
		return rules.Override{}, d.Failf(n, path+".identities", "missing: the identities whose limit it replaces")
	}
	ids, err := d.Strings(v, path+".identities", false, identityChecker(r.Key))
	if err != nil {
		return rules.Override{}, err
	}
	for j, id := range ids {
		item := yamlkit.Deref(yamlkit.Deref(v).Content[j])
		if line, dup := lines[id]; dup {
			return rules.Override{}, d.Failf(item, yamlkit.Elem(path+".identities", j), "the identity is already listed at line %d: give each identity one limit", line)
		}
		lines[id] = item.Line
	}
	if r.Key.Kind() == "api_key" {
		for j := range ids {
			ids[j] = apiKeyHashPrefix + ids[j]
		}
	} else {
		ids = stringsOf(yamlkit.Deref(v)) // as written: rules.New reads them with the key
	}
	if r.Concurrency != nil {
		l, err := d.concurrencyOverride(n, f, path, r)
		return rules.Override{Identities: ids, Limit: l}, err
	}
	if v, ok := f["max"]; ok {
		return rules.Override{}, d.Failf(yamlkit.Deref(v), path+".max", "max overrides a concurrency rule: give a limit")
	}
	d.prefix = path + "."
	lim, err := d.limit(n, f["limit"], r.Algorithm)
	d.prefix = ""
	if err != nil {
		return rules.Override{}, err
	}
	if (lim.Calendar != sluice.NoCalendar || r.Limit.Calendar != sluice.NoCalendar) && !lim.SamePeriod(r.Limit) {
		return rules.Override{}, d.Failf(yamlkit.Deref(f["limit"]), path+".limit", "%v: an override of a calendar limit, or a calendar override, counts in the rule's periods (%v): give it the rule's calendar and zone", lim.Limit, r.Limit)
	}
	if c := lim.Capacity(); c < r.Cost {
		return rules.Override{}, d.Failf(yamlkit.Deref(f["limit"]), path+".limit", "capacity %d is below the rule's cost %d: no request could ever pass", c, r.Cost)
	}
	return rules.Override{Identities: ids, Limit: lim.Limit}, nil
}

// stringsOf returns the values of a list of scalars, checked before.
func stringsOf(seq *yaml.Node) []string {
	out := make([]string, len(seq.Content))
	for i, item := range seq.Content {
		out[i] = yamlkit.Deref(item).Value
	}
	return out
}

// identityChecker returns the check of an override identity of key: as
// the operator API reads it (keyfunc.Key.Parse), or, for an API key, its
// SHA-256 as a bypass entry lists it. The identity returned is the one
// the key gives (for an API key, its hash in hex), to find duplicates.
func identityChecker(key keyfunc.Key) func(string) (string, error) {
	if key.Kind() == "api_key" {
		return checkKeyHash
	}
	return func(s string) (string, error) {
		id, err := key.Parse(s)
		if fe, ok := errors.AsType[*keyfunc.FormError](err); ok {
			return "", errors.New("not an identity of a rule keyed by " + key.Kind() + ": want " + fe.Form)
		}
		if err == nil && id == "" {
			err = errors.New("empty identity")
		}
		return id, err
	}
}

// maxLimit reads a rule's max_limit: a limit with the rule's period, not
// below the rule's limit.
func (d *decoder) maxLimit(n *yaml.Node, r *rules.Rule) (sluice.Limit, error) {
	d.prefix = "max_"
	lim, err := d.limit(n, n, r.Algorithm)
	d.prefix = ""
	if err != nil {
		return sluice.Limit{}, err
	}
	m, n := lim.Limit, yamlkit.Deref(n)
	switch {
	case !m.SamePeriod(r.Limit):
		return sluice.Limit{}, d.Failf(n, "max_limit", "per %s: a request's limit keeps the rule's period; write max_limit per %s", periodOf(m), periodOf(r.Limit))
	case m.Rate < r.Limit.Rate || m.Capacity() < r.Limit.Capacity():
		return sluice.Limit{}, d.Failf(n, "max_limit", "%v is below the rule's limit %v: max_limit is the most a request may set", m, r.Limit)
	}
	return m, nil
}

// periodOf is l's period as Limit.String writes it.
func periodOf(l sluice.Limit) string {
	if l.Calendar != sluice.NoCalendar {
		s := l.String()
		return s[strings.IndexByte(s, '/')+1:]
	}
	s := sluice.Limit{Rate: 1, Period: l.Period}.String()
	return s[strings.IndexByte(s, '/')+1:]
}
