package envoy

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/sluicehq/sluice/internal/yamlkit"
	"github.com/sluicehq/sluice/rules"
)

// MappingOption configures [ParseMapping] and [LoadMapping]. The functions
// of this package that return one say what it does.
type MappingOption func(*mappingConfig)

type mappingConfig struct {
	merge bool
}

// MergeDomains lets several documents, in one file or several, define one
// domain together, as envoyproxy/ratelimit does with
// MERGE_DOMAIN_CONFIG=true (the command sluice-envoy reads that variable).
// Each document adds its top-level descriptors to the domain, in the order
// the files and documents are read; a top-level descriptor whose key and
// value an earlier document of the domain already has is refused, as
// envoyproxy/ratelimit refuses a duplicate descriptor composite key.
// Nested descriptors are not merged: they belong to their top-level
// descriptor. A rate limit's name is the domain's, whichever document
// gives it: two limits may not share one, and replaces may name a limit of
// any of the documents. Documents that state unmatched must agree on it;
// a limit override (RateLimitDescriptor.limit) that matches no limit takes
// the defaults of the domain's first document.
//
// Without it, a domain defined twice, in one file or two, is an error.
func MergeDomains() MappingOption {
	return func(c *mappingConfig) { c.merge = true }
}

// ParseMapping reads a mapping file's content (see the package
// documentation for the format): one YAML document per domain, several
// separated by "---". name appears in error messages, typically as the
// file's path.
//
// Every problem is found here, none per request: an error is a
// [*MappingError] wrapping [ErrInvalidMapping] and
// [sluice.ErrInvalidConfig] that names the file, the line, the domain and
// the field.
func ParseMapping(name string, data []byte, opts ...MappingOption) (*Mapping, error) {
	l := newLoader(opts)
	if err := l.add(name, data); err != nil {
		return nil, err
	}
	return l.mapping()
}

// LoadMapping reads the mapping files at paths, in order, and combines
// their domains into one Mapping. A domain defined twice, in one file or
// two, is an error unless the documents are merged ([MergeDomains]), as
// is a file that cannot be read or parsed (see [ParseMapping]).
func LoadMapping(paths []string, opts ...MappingOption) (*Mapping, error) {
	if len(paths) == 0 {
		return nil, &MappingError{Err: errors.New("no mapping file given")}
	}
	l := newLoader(opts)
	for _, p := range paths {
		data, err := readFile(p)
		if err != nil {
			return nil, err
		}
		if err := l.add(p, data); err != nil {
			return nil, err
		}
	}
	return l.mapping()
}

// loader combines the documents of mapping files into a Mapping.
type loader struct {
	cfg     mappingConfig
	domains map[string]*part // each domain's parts, combined into its first
	order   []*part
}

func newLoader(opts []MappingOption) *loader {
	l := &loader{domains: make(map[string]*part)}
	for _, o := range opts {
		if o != nil {
			o(&l.cfg)
		}
	}
	return l
}

// add reads one file's documents.
func (l *loader) add(name string, data []byte) error {
	data, err := yamlkit.Input(data, MaxMappingSize)
	if err != nil {
		return &MappingError{File: name, Err: err}
	}
	d := newDecoder(name) // one budget of values for the file's documents
	docs, found := yamlkit.NewDocuments(data), false
	for {
		doc, err := docs.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return syntaxError(name, err)
		}
		if len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
			continue // an empty document, such as after a trailing "---"
		}
		found = true
		p, err := d.document(doc.Content[0])
		if err != nil {
			return err
		}
		if err := l.combine(p); err != nil {
			return err
		}
	}
	if !found {
		return &MappingError{File: name, Err: errors.New("empty file: no domain")}
	}
	return nil
}

// combine adds a document to the domain it names.
func (l *loader) combine(p *part) error {
	first := l.domains[p.dom.name]
	if first == nil {
		l.domains[p.dom.name] = p
		l.order = append(l.order, p)
		return nil
	}
	if !l.cfg.merge {
		return &MappingError{File: p.dom.file, Line: p.dom.line, Domain: p.dom.name, Field: "domain",
			Err: fmt.Errorf("defined twice (first at %s:%d)", first.dom.file, first.dom.line)}
	}
	return first.merge(p)
}

// merge adds the top-level descriptors, limits and unmatched of a later
// document of the domain to p.
func (p *part) merge(q *part) error {
	fail := func(line int, field string, format string, args ...any) error {
		return &MappingError{File: q.dom.file, Line: line, Domain: q.dom.name, Field: field, Err: fmt.Errorf(format, args...)}
	}
	if q.unmatchedAt.line > 0 {
		if p.unmatchedAt.line > 0 && p.dom.unmatched != q.dom.unmatched {
			return fail(q.unmatchedAt.line, "unmatched", "%v here, %v at %s: the documents of a merged domain agree on it",
				q.dom.unmatched, p.dom.unmatched, p.unmatchedAt)
		}
		p.dom.unmatched, p.unmatchedAt = q.dom.unmatched, q.unmatchedAt
	}
	if q.dom.root != nil {
		if p.dom.root == nil {
			p.dom.root = newLevel()
		}
		for i, n := range q.dom.root.all {
			if first := p.dom.root.find(n); first != nil {
				return fail(n.line, "descriptors["+strconv.Itoa(i)+"]", "a second descriptor with %s at the top of the domain (first at %s:%d)",
					n.what(), p.fileOf(first), first.line)
			}
		}
	}
	names := slices.SortedFunc(maps.Keys(q.names), func(a, b string) int { return cmp.Compare(q.names[a].line, q.names[b].line) })
	for _, name := range names {
		if first, dup := p.names[name]; dup {
			at := q.names[name]
			return fail(at.line, at.field, "%s", twoLimits(name, first.String()))
		}
	}
	if q.dom.root != nil {
		if p.files == nil {
			p.files = make(map[*node]string)
		}
		for _, n := range q.dom.root.all {
			p.dom.root.add(n)
			p.files[n] = q.dom.file
		}
	}
	for name, at := range q.names {
		p.names[name] = at
	}
	p.rules = append(p.rules, q.rules...)
	p.refs = append(p.refs, q.refs...)
	return nil
}

// fileOf returns the file that gives n, a top-level descriptor of p's
// domain.
func (p *part) fileOf(n *node) string {
	if f, ok := p.files[n]; ok {
		return f
	}
	return p.dom.file
}

// mapping checks each domain's replaces and builds its rule set.
func (l *loader) mapping() (*Mapping, error) {
	m := &Mapping{domains: make(map[string]*domain, len(l.order))}
	for _, p := range l.order {
		if err := p.finish(); err != nil {
			return nil, err
		}
		m.domains[p.dom.name] = p.dom
	}
	return m, nil
}

// finish checks that every replaces entry names a limit of the domain,
// makes the domain's rules its set, and points each counted limit at its
// rule in the set, whose defaults are filled in.
func (p *part) finish() error {
	for _, r := range p.refs {
		if _, ok := p.names[r.name]; !ok {
			return &MappingError{File: r.at.file, Line: r.at.line, Domain: p.dom.name, Field: r.at.field,
				Err: fmt.Errorf("%s names no rate limit of the domain", quote(r.name))}
		}
	}
	if len(p.rules) == 0 {
		return nil
	}
	set, err := rules.New(p.rules...)
	if err != nil { // the checks above should have caught it
		return &MappingError{File: p.dom.file, Line: p.dom.line, Domain: p.dom.name, Err: err}
	}
	p.dom.set = set
	byName := make(map[string]*rules.Rule, len(p.rules))
	all := set.Rules()
	for i := range all {
		byName[all[i].Name] = &all[i]
	}
	p.dom.root.walk(func(n *node) {
		if n.limit != nil && !n.limit.unlimited && !n.limit.banned {
			n.limit.rule = byName[n.limit.name]
		}
	})
	return nil
}

// syntaxError returns the *MappingError of a file that is not YAML.
func syntaxError(file string, err error) error {
	if se, ok := errors.AsType[*yamlkit.SyntaxError](err); ok {
		return &MappingError{File: file, Line: se.Line, Err: se.Err}
	}
	return &MappingError{File: file, Err: err}
}

// readFile reads at most MaxMappingSize bytes of path.
func readFile(path string) ([]byte, error) {
	data, err := yamlkit.ReadFile(path, MaxMappingSize)
	if err != nil {
		return nil, &MappingError{File: path, Err: err}
	}
	return data, nil
}
