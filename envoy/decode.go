package envoy

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/ascii"
	"github.com/sluicehq/sluice/internal/yamlkit"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"go.yaml.in/yaml/v3"
)

// The fields of each part of a mapping file: envoyproxy/ratelimit's, then
// sluice's own.
var (
	topFields        = []string{"domain", "descriptors", "defaults", "unmatched"}
	defaultFields    = []string{"algorithm", "on_fail", "expose"}
	descriptorFields = []string{"key", "value", "rate_limit", "descriptors", "shadow_mode", "quota_mode",
		"detailed_metric", "value_to_metric", "share_threshold", "metadata"}
	rateLimitFields = []string{"unit", "requests_per_unit", "unlimited", "name", "replaces",
		"algorithm", "burst", "on_fail", "expose"}
)

const (
	// maxDepth bounds how deeply descriptors nest.
	maxDepth = 32
	// maxNameLen bounds a rate limit's name: it appears in every
	// response's headers.
	maxNameLen = 128
)

// descriptorKey is the key of every rule a mapping defines. The service
// never calls it: it builds each descriptor's hit from the descriptor.
var descriptorKey = keyfunc.New("envoy", func(*http.Request) (string, error) {
	return "", errors.New("envoy: a mapping's rule decides Envoy descriptors, not HTTP requests")
})

// decoder reads one document of a mapping file, node by node, so that
// every error carries the line of the value it is about.
type decoder struct {
	*yamlkit.Reader
	file   string
	domain string

	// The document's defaults.
	algorithm sluice.Algorithm
	onFail    rules.OnFail
	expose    bool

	names map[string]int // rate limit names and their lines
	rules []rules.Rule
	refs  []ref // replaces entries, checked once every name is known
}

// newDecoder returns the decoder of one file's documents.
func newDecoder(file string) *decoder {
	d := &decoder{file: file}
	d.Reader = yamlkit.NewReader(func(line int, field string, err error) error {
		return &MappingError{File: d.file, Line: line, Domain: d.domain, Field: field, Err: err}
	})
	return d
}

// ref is one replaces entry.
type ref struct {
	name, field string
	line        int
}

// document decodes one domain.
func (d *decoder) document(root *yaml.Node) (*domain, error) {
	d.domain = peekDomain(root)  // named in errors about the other fields too
	d.algorithm, d.onFail = 0, 0 // the document's own defaults, or these
	d.rules, d.refs = nil, nil
	top, err := d.Mapping(root, "", topFields...)
	if err != nil {
		return nil, err
	}
	dn, ok := top["domain"]
	if !ok {
		return nil, d.Failf(yamlkit.Deref(root), "domain", "missing: every document names its domain")
	}
	name, err := d.Str(dn, "domain")
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, d.Failf(yamlkit.Deref(dn), "domain", "empty: every document names its domain")
	}
	d.domain = name
	dom := &domain{name: name, file: d.file, line: yamlkit.Deref(dn).Line}
	d.expose = true
	if n, ok := top["defaults"]; ok {
		if err := d.defaults(n); err != nil {
			return nil, err
		}
	}
	if n, ok := top["unmatched"]; ok {
		if dom.unmatched, err = d.unmatched(n); err != nil {
			return nil, err
		}
	}
	d.names = make(map[string]int)
	if n, ok := top["descriptors"]; ok && yamlkit.Deref(n).Tag != "!!null" {
		if dom.root, err = d.level(n, "descriptors", name, 0); err != nil {
			return nil, err
		}
	}
	for _, r := range d.refs {
		if _, ok := d.names[r.name]; !ok {
			return nil, &MappingError{File: d.file, Line: r.line, Domain: d.domain, Field: r.field,
				Err: fmt.Errorf("%s names no rate limit of the domain", yamlkit.Quote(r.name))}
		}
	}
	if err := d.ruleSet(dom); err != nil {
		return nil, err
	}
	dom.override = newRule(name+".limit_override", sluice.Limit{}, d.algorithm, d.onFail, false, !d.expose)
	return dom, nil
}

// peekDomain returns the domain a document's top level names, or "".
func peekDomain(root *yaml.Node) string {
	name := ""
	if r := yamlkit.Deref(root); r.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(r.Content); i += 2 {
			if k, v := yamlkit.Deref(r.Content[i]), yamlkit.Deref(r.Content[i+1]); k.Value == "domain" && v.Kind == yaml.ScalarNode && v.Tag != "!!null" {
				name = v.Value
			}
		}
	}
	return name
}

// unmatched decodes the top-level unmatched field.
func (d *decoder) unmatched(n *yaml.Node) (Unmatched, error) {
	s, err := d.Str(n, "unmatched")
	if err != nil {
		return 0, err
	}
	i := slices.Index(unmatchedNames[:], s)
	if i < 0 {
		return 0, d.Failf(yamlkit.Deref(n), "unmatched", "%s: want ok or over_limit", yamlkit.Quote(s))
	}
	return Unmatched(i), nil
}

// ruleSet makes the document's rules dom's set, if it has any, and points
// each limit at its rule in the set, whose defaults are filled in.
func (d *decoder) ruleSet(dom *domain) error {
	if len(d.rules) == 0 {
		return nil
	}
	var err error
	if dom.set, err = rules.New(d.rules...); err != nil { // the checks above should have caught it
		return d.Failf(nil, "", "%v", err)
	}
	byName := make(map[string]*rules.Rule, len(d.rules))
	all := dom.set.Rules()
	for i := range all {
		byName[all[i].Name] = &all[i]
	}
	dom.root.walk(func(n *node) {
		if n.limit != nil && !n.limit.unlimited {
			n.limit.rule = byName[n.limit.name]
		}
	})
	return nil
}

// walk calls f for every node under lv.
func (lv *level) walk(f func(*node)) {
	if lv == nil {
		return
	}
	visit := func(n *node) { f(n); n.next.walk(f) }
	for _, n := range lv.exact {
		visit(n)
	}
	for _, n := range lv.wild {
		visit(n)
	}
	for _, n := range lv.any {
		visit(n)
	}
}

// defaults decodes the defaults section.
func (d *decoder) defaults(n *yaml.Node) error {
	f, err := d.Mapping(n, "defaults", defaultFields...)
	if err != nil {
		return err
	}
	if v, ok := f["algorithm"]; ok {
		if d.algorithm, err = d.algorithmOf(v, "defaults.algorithm"); err != nil {
			return err
		}
	}
	if v, ok := f["on_fail"]; ok {
		if d.onFail, err = d.onFailOf(v, "defaults.on_fail"); err != nil {
			return err
		}
	}
	if v, ok := f["expose"]; ok {
		if d.expose, err = d.Boolean(v, "defaults.expose"); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) algorithmOf(n *yaml.Node, path string) (sluice.Algorithm, error) {
	s, err := d.Str(n, path)
	if err != nil {
		return 0, err
	}
	a, err := sluice.ParseAlgorithm(s)
	if err != nil {
		return 0, d.Failf(yamlkit.Deref(n), path, "%s: want token_bucket, sliding_window, fixed_window or sliding_log", yamlkit.Quote(s))
	}
	return a, nil
}

func (d *decoder) onFailOf(n *yaml.Node, path string) (rules.OnFail, error) {
	s, err := d.Str(n, path)
	if err != nil {
		return 0, err
	}
	f, err := rules.ParseOnFail(s)
	if err != nil {
		return 0, d.Failf(yamlkit.Deref(n), path, "%s: want local, open or closed", yamlkit.Quote(s))
	}
	return f, nil
}

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
	lv := &level{exact: map[entry]*node{}, any: map[string]*node{}}
	lines := make(map[entry]int)
	for i, item := range seq.Content {
		p := yamlkit.Elem(path, i)
		nd, err := d.descriptor(item, p, prefix, depth)
		if err != nil {
			return nil, err
		}
		e := entry{nd.key, nd.value}
		if first, dup := lines[e]; dup {
			what := "key " + yamlkit.Quote(nd.key)
			if nd.value != "" {
				what += " and value " + yamlkit.Quote(nd.value)
			}
			return nil, d.Failf(yamlkit.Deref(item), p, "a second descriptor with %s at this level (first at line %d)", what, first)
		}
		lines[e] = yamlkit.Deref(item).Line
		switch {
		case nd.value == "":
			lv.any[nd.key] = nd
		case nd.parts != nil:
			lv.wild = append(lv.wild, nd)
		default:
			lv.exact[e] = nd
		}
	}
	return lv, nil
}

// descriptor decodes one descriptor and what it nests.
func (d *decoder) descriptor(n *yaml.Node, path, prefix string, depth int) (*node, error) {
	f, err := d.Mapping(n, path, descriptorFields...)
	if err != nil {
		return nil, err
	}
	kn, ok := f["key"]
	if !ok {
		return nil, d.Failf(yamlkit.Deref(n), yamlkit.Sub(path, "key"), "missing: every descriptor has a key")
	}
	nd := &node{}
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
	}
	if v, ok := f["descriptors"]; ok && yamlkit.Deref(v).Tag != "!!null" {
		if nd.next, err = d.level(v, yamlkit.Sub(path, "descriptors"), full, depth+1); err != nil {
			return nil, err
		}
	}
	return nd, nil
}

// flags decodes a descriptor's boolean fields, refusing those sluice does
// not support, and sets nd.share.
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
	if flags["quota_mode"] {
		return nil, d.Failf(yamlkit.Deref(f["quota_mode"]), yamlkit.Sub(path, "quota_mode"),
			"not supported: sluice decides all of a request's descriptors together, all or nothing; remove it")
	}
	if v, ok := f["metadata"]; ok {
		return nil, d.Failf(yamlkit.Deref(v), yamlkit.Sub(path, "metadata"), "not supported: sluice returns no dynamic metadata; remove it")
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
