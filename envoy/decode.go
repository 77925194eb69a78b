package envoy

import (
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/sluicehq/sluice"
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

// decoder reads the documents of a mapping file, node by node, so that
// every error carries the line of the value it is about. The strict
// reading is yamlkit's, shared with rule files; its errors are
// *MappingErrors naming the domain.
type decoder struct {
	*yamlkit.Reader
	file   string
	domain string
	part   *part // what the document being read says

	// The document's defaults.
	algorithm sluice.Algorithm
	onFail    rules.OnFail
	expose    bool
}

// newDecoder returns the decoder of one file's documents. They share one
// budget of values (see yamlkit.MaxNodes).
func newDecoder(file string) *decoder {
	d := &decoder{file: file}
	d.Reader = yamlkit.NewReader(func(line int, field string, err error) error {
		return &MappingError{File: d.file, Line: line, Domain: d.domain, Field: field, Err: err}
	})
	return d
}

// part is what one document of a mapping file says about its domain:
// all of it, or, with [MergeDomains], a part that other documents
// complete.
type part struct {
	dom         *domain // its name, where it is named, unmatched, the top-level descriptors, the override template
	unmatchedAt place   // where unmatched is stated; line 0 when it is not
	rules       []rules.Rule
	names       map[string]place // rate limit names, and where each is given
	refs        []ref            // replaces entries, checked once every document of the domain is read
	files       map[*node]string // the files of top-level descriptors merged from other documents
}

// place is where a file gives something: for errors about another that
// clashes with it.
type place struct {
	file, field string
	line        int
}

func (p place) String() string { return p.file + ":" + strconv.Itoa(p.line) }

// ref is one replaces entry.
type ref struct {
	name string
	at   place
}

// document decodes one document.
func (d *decoder) document(root *yaml.Node) (*part, error) {
	d.domain = peekDomain(root)  // named in errors about the other fields too
	d.algorithm, d.onFail = 0, 0 // the document's own defaults, or these
	d.expose = true
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
	d.part = &part{dom: &domain{name: name, file: d.file, line: yamlkit.Deref(dn).Line}, names: make(map[string]place)}
	dom := d.part.dom
	if n, ok := top["defaults"]; ok {
		if err := d.defaults(n); err != nil {
			return nil, err
		}
	}
	if n, ok := top["unmatched"]; ok {
		if dom.unmatched, err = d.unmatched(n); err != nil {
			return nil, err
		}
		d.part.unmatchedAt = place{file: d.file, field: "unmatched", line: yamlkit.Deref(n).Line}
	}
	if n, ok := top["descriptors"]; ok && yamlkit.Deref(n).Tag != "!!null" {
		if dom.root, err = d.level(n, "descriptors", name, 0); err != nil {
			return nil, err
		}
	}
	dom.override = newRule(name+".limit_override", sluice.Limit{}, d.algorithm, d.onFail, false, !d.expose)
	return d.part, nil
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
