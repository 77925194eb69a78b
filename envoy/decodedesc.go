package envoy

import (
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/internal/ascii"
	"github.com/sluicehq/sluice/internal/yamlkit"
	"go.yaml.in/yaml/v3"
)

// level decodes a list of descriptors. prefix is the path of key_value
// names above it, from the domain, as envoyproxy/ratelimit names a limit.
func (d *decoder) level(n *yaml.Node, path, prefix string, depth int) (*level, error) {
	seq, err := d.Sequence(n, path, "a list of descriptors")
	if err != nil {
		return nil, err
	}
	if depth >= maxDepth {
		return nil, d.Failf(seq, path, "descriptors nest more than %d deep", maxDepth)
	}
	lv := newLevel()
	lines := make(map[entry]int)
	for i, item := range seq.Content {
		p := yamlkit.Elem(path, i)
		nd, err := d.descriptor(item, p, prefix, depth)
		if err != nil {
			return nil, err
		}
		e := entry{nd.key, nd.value}
		if first, dup := lines[e]; dup {
			return nil, d.Failf(yamlkit.Deref(item), p, "a second descriptor with %s at this level (first at line %d)", nd.what(), first)
		}
		lines[e] = nd.line
		lv.add(nd)
	}
	return lv, nil
}

// descriptor decodes one descriptor and what it nests.
func (d *decoder) descriptor(n *yaml.Node, path, prefix string, depth int) (*node, error) {
	if err := d.refuseConcurrency(n, path); err != nil {
		return nil, err
	}
	f, err := d.Mapping(n, path, descriptorFields...)
	if err != nil {
		return nil, err
	}
	kn, ok := f["key"]
	if !ok {
		return nil, d.Failf(yamlkit.Deref(n), yamlkit.Sub(path, "key"), "missing: every descriptor has a key")
	}
	nd := &node{line: yamlkit.Deref(n).Line}
	if nd.key, err = d.Str(kn, yamlkit.Sub(path, "key")); err != nil {
		return nil, err
	}
	if nd.key == "" {
		return nil, d.Failf(yamlkit.Deref(kn), yamlkit.Sub(path, "key"), "empty: every descriptor has a key")
	}
	if v, ok := f["value"]; ok {
		if nd.value, err = d.StrOrNull(v, yamlkit.Sub(path, "value")); err != nil {
			return nil, err
		}
		if strings.Contains(nd.value, "*") {
			nd.parts = strings.Split(nd.value, "*")
		}
	}
	full := prefix + "." + nd.key
	if nd.value != "" {
		full += "_" + nd.value
	}
	flags, err := d.flags(f, path, nd)
	if err != nil {
		return nil, err
	}
	if v, ok := f["rate_limit"]; ok {
		if nd.limit, err = d.rateLimit(v, yamlkit.Sub(path, "rate_limit"), full, flags["shadow_mode"]); err != nil {
			return nil, err
		}
		nd.limit.quota = flags["quota_mode"]
	}
	if v, ok := f["metadata"]; ok {
		md, err := d.metadata(v, yamlkit.Sub(path, "metadata"))
		if err != nil {
			return nil, err
		}
		if nd.limit != nil {
			nd.limit.metadata = md // returned when the limit is matched, as envoyproxy/ratelimit does
		}
	}
	if v, ok := f["descriptors"]; ok && yamlkit.Deref(v).Tag != "!!null" {
		if nd.next, err = d.level(v, yamlkit.Sub(path, "descriptors"), full, depth+1); err != nil {
			return nil, err
		}
	}
	return nd, nil
}

// flags decodes a descriptor's boolean fields and sets nd.share.
func (d *decoder) flags(f map[string]*yaml.Node, path string, nd *node) (map[string]bool, error) {
	flags := map[string]bool{}
	var err error
	for _, name := range []string{"shadow_mode", "quota_mode", "detailed_metric", "value_to_metric", "share_threshold"} {
		if v, ok := f[name]; ok {
			if flags[name], err = d.Boolean(v, yamlkit.Sub(path, name)); err != nil {
				return nil, err
			}
		}
	}
	if flags["share_threshold"] {
		if nd.parts == nil {
			return nil, d.Failf(yamlkit.Deref(f["share_threshold"]), yamlkit.Sub(path, "share_threshold"),
				"needs a value with a wildcard ('*'): it makes every value the wildcard matches share one limit")
		}
		nd.share = true
	}
	return flags, nil
}

// limitName returns a rate_limit's name (its name field, else full,
// escaped), and records it, refusing one the domain already has.
func (d *decoder) limitName(n *yaml.Node, f map[string]*yaml.Node, path, full string) (string, error) {
	at := place{file: d.file, field: yamlkit.Sub(path, "name"), line: yamlkit.Deref(n).Line}
	name := escapeName(full)
	if v, ok := f["name"]; ok {
		s, err := d.Str(v, yamlkit.Sub(path, "name"))
		if err != nil {
			return "", err
		}
		switch {
		case s == "":
			return "", d.Failf(yamlkit.Deref(v), yamlkit.Sub(path, "name"), "empty: leave the field out instead")
		case len(s) > maxNameLen:
			return "", d.Failf(yamlkit.Deref(v), yamlkit.Sub(path, "name"), "longer than %d bytes", maxNameLen)
		case !ascii.Printable(s):
			return "", d.Failf(yamlkit.Deref(v), yamlkit.Sub(path, "name"), "%s: must be printable ASCII (it names the limit in response headers)", yamlkit.Quote(s))
		}
		name, at.line = s, yamlkit.Deref(v).Line
	}
	if first, dup := d.part.names[name]; dup {
		return "", d.Failf(yamlkit.Deref(n), at.field, "%s", twoLimits(name, "line "+strconv.Itoa(first.line)))
	}
	d.part.names[name] = at
	return name, nil
}

// twoLimits says that name names a second rate limit of a domain, the
// first at first.
func twoLimits(name, first string) string {
	return yamlkit.Quote(name) + " names two rate limits of the domain (first at " + first + "); name them apart with name"
}

// escapeName returns s with every byte outside printable ASCII written as
// '?', so that any descriptor path makes a valid rule name. Two paths that
// differ only there make the same name, which the decoder refuses, asking
// for a name.
func escapeName(s string) string {
	if ascii.Printable(s) {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b)
}
