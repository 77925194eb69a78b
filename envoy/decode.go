package envoy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice"
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
	// maxNodes bounds the YAML nodes a document may make the decoder
	// visit, aliases followed: a few aliases must not stand for millions.
	maxNodes = 200_000
	// maxNameLen bounds a rate limit's name: it appears in every
	// response's headers.
	maxNameLen = 128
	// maxAliasHops bounds the alias chain deref follows.
	maxAliasHops = 8
)

// descriptorKey is the key of every rule a mapping defines. The service
// never calls it: it builds each descriptor's hit from the descriptor.
var descriptorKey = keyfunc.New("envoy", func(*http.Request) (string, error) {
	return "", errors.New("envoy: a mapping's rule decides Envoy descriptors, not HTTP requests")
})

// decoder reads one document of a mapping file, node by node, so that
// every error carries the line of the value it is about.
type decoder struct {
	file   string
	domain string
	budget int // nodes left to visit

	// The document's defaults.
	algorithm sluice.Algorithm
	onFail    rules.OnFail
	expose    bool

	names map[string]int // rate limit names and their lines
	rules []rules.Rule
	refs  []ref // replaces entries, checked once every name is known
}

// ref is one replaces entry.
type ref struct {
	name, field string
	line        int
}

// fail returns a *MappingError at n's line about field.
func (d *decoder) fail(n *yaml.Node, field, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &MappingError{File: d.file, Line: line, Domain: d.domain, Field: field, Err: fmt.Errorf(format, args...)}
}

// parseDocuments returns the top-level nodes of a file's documents.
func parseDocuments(name string, data []byte) (docs []*yaml.Node, err error) {
	defer func() {
		// A malformed file must never take the process down.
		if p := recover(); p != nil {
			docs, err = nil, &MappingError{File: name, Err: fmt.Errorf("invalid YAML: %v", p)}
		}
	}()
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			line, msg := yamlError(err)
			return nil, &MappingError{File: name, Line: line, Err: errors.New(msg)}
		}
		if len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
			continue // an empty document, such as after a trailing "---"
		}
		docs = append(docs, doc.Content[0])
	}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlError splits a YAML library error into its line and message.
func yamlError(err error) (int, string) {
	msg := err.Error()
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	return line, "invalid YAML: " + msg
}

// deref follows aliases to the node they stand for.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < maxAliasHops; i++ {
		n = n.Alias
	}
	return n
}

// describe names the kind of a node for "must be X, not Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "null"
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		}
		return "a string"
	}
	return "an alias"
}

func sub(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func elem(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// visit charges the node budget for n.
func (d *decoder) visit(n *yaml.Node, path string) error {
	d.budget--
	if d.budget < 0 {
		return d.fail(n, path, "the document is too large (more than %d values, aliases expanded)", maxNodes)
	}
	return nil
}

// mapping checks that n is a mapping whose keys are all in known, each
// once, and returns its values by key.
func (d *decoder) mapping(n *yaml.Node, path string, known []string) (map[string]*yaml.Node, error) {
	n = deref(n)
	if err := d.visit(n, path); err != nil {
		return nil, err
	}
	if n.Kind != yaml.MappingNode {
		return nil, d.fail(n, path, "must be a mapping (name: value), not %s", describe(n))
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := deref(n.Content[i])
		if k.Kind != yaml.ScalarNode || k.Tag == "!!null" {
			return nil, d.fail(k, path, "a field name must be a plain string, not %s", describe(k))
		}
		if k.Tag == "!!merge" {
			return nil, d.fail(k, path, "merge keys (<<) are not supported")
		}
		name := k.Value
		if !slices.Contains(known, name) {
			return nil, d.fail(k, path, "unknown field %s (known: %s)", quote(name), strings.Join(known, ", "))
		}
		if prev, dup := out[name]; dup {
			return nil, d.fail(k, sub(path, name), "set twice (first at line %d)", deref(prev).Line)
		}
		out[name] = n.Content[i+1]
	}
	return out, nil
}

// str reads a scalar as text; null is "" when nullOK.
func (d *decoder) str(n *yaml.Node, path string, nullOK bool) (string, error) {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" && nullOK {
		return "", nil
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", d.fail(n, path, "must be a string, not %s", describe(n))
	}
	return n.Value, nil
}

// integer reads a whole number in [lo, hi].
func (d *decoder) integer(n *yaml.Node, path string, lo, hi int64) (int64, error) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!float" {
			return 0, d.fail(n, path, "%s is not a whole number", quote(n.Value))
		}
		return 0, d.fail(n, path, "must be a whole number, not %s", describe(n))
	}
	var v int64
	if err := n.Decode(&v); err != nil || v < lo || v > hi {
		return 0, d.fail(n, path, "%s is out of range (%d to %d)", quote(n.Value), lo, hi)
	}
	return v, nil
}

// boolean reads true or false.
func (d *decoder) boolean(n *yaml.Node, path string) (bool, error) {
	n = deref(n)
	var v bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&v) != nil {
		return false, d.fail(n, path, "must be true or false, not %s", describe(n))
	}
	return v, nil
}

// document decodes one domain.
func (d *decoder) document(root *yaml.Node) (*domain, error) {
	d.domain = peekDomain(root) // named in errors about the other fields too
	top, err := d.mapping(root, "", topFields)
	if err != nil {
		return nil, err
	}
	dn, ok := top["domain"]
	if !ok {
		return nil, d.fail(deref(root), "domain", "missing: every document names its domain")
	}
	name, err := d.str(dn, "domain", false)
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, d.fail(deref(dn), "domain", "empty: every document names its domain")
	}
	d.domain = name
	dom := &domain{name: name, file: d.file, line: deref(dn).Line}
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
	if n, ok := top["descriptors"]; ok && deref(n).Tag != "!!null" {
		if dom.root, err = d.level(n, "descriptors", name, 0); err != nil {
			return nil, err
		}
	}
	for _, r := range d.refs {
		if _, ok := d.names[r.name]; !ok {
			return nil, &MappingError{File: d.file, Line: r.line, Domain: d.domain, Field: r.field,
				Err: fmt.Errorf("%s names no rate limit of the domain", quote(r.name))}
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
	if r := deref(root); r.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(r.Content); i += 2 {
			if k, v := deref(r.Content[i]), deref(r.Content[i+1]); k.Value == "domain" && v.Kind == yaml.ScalarNode && v.Tag != "!!null" {
				name = v.Value
			}
		}
	}
	return name
}

// unmatched decodes the top-level unmatched field.
func (d *decoder) unmatched(n *yaml.Node) (Unmatched, error) {
	s, err := d.str(n, "unmatched", false)
	if err != nil {
		return 0, err
	}
	i := slices.Index(unmatchedNames[:], s)
	if i < 0 {
		return 0, d.fail(deref(n), "unmatched", "%s: want ok or over_limit", quote(s))
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
		return d.fail(nil, "", "%v", err)
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
	f, err := d.mapping(n, "defaults", defaultFields)
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
		if d.expose, err = d.boolean(v, "defaults.expose"); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) algorithmOf(n *yaml.Node, path string) (sluice.Algorithm, error) {
	s, err := d.str(n, path, false)
	if err != nil {
		return 0, err
	}
	a, err := sluice.ParseAlgorithm(s)
	if err != nil {
		return 0, d.fail(deref(n), path, "%s: want token_bucket, sliding_window, fixed_window or sliding_log", quote(s))
	}
	return a, nil
}

func (d *decoder) onFailOf(n *yaml.Node, path string) (rules.OnFail, error) {
	s, err := d.str(n, path, false)
	if err != nil {
		return 0, err
	}
	f, err := rules.ParseOnFail(s)
	if err != nil {
		return 0, d.fail(deref(n), path, "%s: want local, open or closed", quote(s))
	}
	return f, nil
}

// level decodes a list of descriptors. prefix is the path of key_value
// names above it, from the domain, as envoyproxy/ratelimit names a limit.
func (d *decoder) level(n *yaml.Node, path, prefix string, depth int) (*level, error) {
	seq := deref(n)
	if err := d.visit(seq, path); err != nil {
		return nil, err
	}
	if seq.Kind != yaml.SequenceNode {
		return nil, d.fail(seq, path, "must be a list of descriptors, not %s", describe(seq))
	}
	if depth >= maxDepth {
		return nil, d.fail(seq, path, "descriptors nest more than %d deep", maxDepth)
	}
	lv := &level{exact: map[entry]*node{}, any: map[string]*node{}}
	lines := make(map[entry]int)
	for i, item := range seq.Content {
		p := elem(path, i)
		nd, err := d.descriptor(item, p, prefix, depth)
		if err != nil {
			return nil, err
		}
		e := entry{nd.key, nd.value}
		if first, dup := lines[e]; dup {
			what := "key " + quote(nd.key)
			if nd.value != "" {
				what += " and value " + quote(nd.value)
			}
			return nil, d.fail(deref(item), p, "a second descriptor with %s at this level (first at line %d)", what, first)
		}
		lines[e] = deref(item).Line
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
	f, err := d.mapping(n, path, descriptorFields)
	if err != nil {
		return nil, err
	}
	kn, ok := f["key"]
	if !ok {
		return nil, d.fail(deref(n), sub(path, "key"), "missing: every descriptor has a key")
	}
	nd := &node{}
	if nd.key, err = d.str(kn, sub(path, "key"), false); err != nil {
		return nil, err
	}
	if nd.key == "" {
		return nil, d.fail(deref(kn), sub(path, "key"), "empty: every descriptor has a key")
	}
	if v, ok := f["value"]; ok {
		if nd.value, err = d.str(v, sub(path, "value"), true); err != nil {
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
		if nd.limit, err = d.rateLimit(v, sub(path, "rate_limit"), full, flags["shadow_mode"]); err != nil {
			return nil, err
		}
	}
	if v, ok := f["descriptors"]; ok && deref(v).Tag != "!!null" {
		if nd.next, err = d.level(v, sub(path, "descriptors"), full, depth+1); err != nil {
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
			if flags[name], err = d.boolean(v, sub(path, name)); err != nil {
				return nil, err
			}
		}
	}
	if flags["quota_mode"] {
		return nil, d.fail(deref(f["quota_mode"]), sub(path, "quota_mode"),
			"not supported: sluice decides all of a request's descriptors together, all or nothing; remove it")
	}
	if v, ok := f["metadata"]; ok {
		return nil, d.fail(deref(v), sub(path, "metadata"), "not supported: sluice returns no dynamic metadata; remove it")
	}
	if flags["share_threshold"] {
		if nd.parts == nil {
			return nil, d.fail(deref(f["share_threshold"]), sub(path, "share_threshold"),
				"needs a value with a wildcard ('*'): it makes every value the wildcard matches share one limit")
		}
		nd.share = true
	}
	return flags, nil
}

// printable reports whether s is printable ASCII.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// escapeName returns s with every byte outside printable ASCII written as
// '?', so that any descriptor path makes a valid rule name. Two paths that
// differ only there make the same name, which the decoder refuses, asking
// for a name.
func escapeName(s string) string {
	if printable(s) {
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
