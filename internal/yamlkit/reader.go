package yamlkit

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"
)

// MaxNodes bounds the values one file may make a [Reader] visit, aliases
// expanded: a few aliases must not stand for millions of values.
const MaxNodes = 200_000

// FailFunc makes the caller's error about field at a 1-based line (0 when
// there is none), err saying what is wrong.
type FailFunc func(line int, field string, err error) error

// Reader reads a parsed file node by node. Its errors are made by the
// caller's [FailFunc], so that each package keeps its own error type. A
// Reader is for one file and one goroutine.
type Reader struct {
	fail   FailFunc
	budget int // values left to visit
}

// NewReader returns a reader whose errors fail makes, with a budget of
// [MaxNodes] values.
func NewReader(fail FailFunc) *Reader {
	return &Reader{fail: fail, budget: MaxNodes}
}

// Failf returns the caller's error about field at n's line (0 for a nil
// n), formatted as fmt.Errorf formats.
func (r *Reader) Failf(n *yaml.Node, field, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return r.fail(line, field, fmt.Errorf(format, args...))
}

// Visit charges the budget for visiting n and, for a list, its elements
// (reading a list's elements is then free: only mappings and lists, which
// aliases can repeat, cost). It fails once the budget is spent.
func (r *Reader) Visit(n *yaml.Node, path string) error {
	r.budget--
	if n.Kind == yaml.SequenceNode {
		r.budget -= len(n.Content)
	}
	if r.budget < 0 {
		r.budget = -1 // stays spent however many values are charged
		return r.Failf(n, path, "the document is too large (more than %d values, aliases expanded)", MaxNodes)
	}
	return nil
}

// Mapping checks that n is a mapping whose keys are plain strings, each
// in known and each once, and returns its values by key. An unknown key
// is refused with the closest known name, or the known names; a long one
// is described by its length only (see [MaxFieldName]).
func (r *Reader) Mapping(n *yaml.Node, path string, known ...string) (map[string]*yaml.Node, error) {
	n = Deref(n)
	if err := r.Visit(n, path); err != nil {
		return nil, err
	}
	if n.Kind != yaml.MappingNode {
		return nil, r.Failf(n, path, "must be a mapping (name: value), not %s", Describe(n))
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := Deref(n.Content[i])
		if k.Kind != yaml.ScalarNode || k.Tag == "!!null" {
			return nil, r.Failf(k, path, "a field name must be a plain string, not %s", Describe(k))
		}
		if k.Tag == "!!merge" {
			return nil, r.Failf(k, path, "merge keys (<<) are not supported; use defaults")
		}
		name := k.Value
		if !slices.Contains(known, name) {
			return nil, r.Failf(k, path, "%s", unknownField(name, known))
		}
		if prev, dup := out[name]; dup {
			return nil, r.Failf(k, Sub(path, name), "set twice (first at line %d)", Deref(prev).Line)
		}
		out[name] = n.Content[i+1]
	}
	return out, nil
}

// Sequence checks that n is a list and returns it, aliases followed;
// what names the list for the message when it is not one, as in "must
// be a list of rules".
func (r *Reader) Sequence(n *yaml.Node, path, what string) (*yaml.Node, error) {
	n = Deref(n)
	if err := r.Visit(n, path); err != nil {
		return nil, err
	}
	if n.Kind != yaml.SequenceNode {
		return nil, r.Failf(n, path, "must be %s, not %s", what, Describe(n))
	}
	return n, nil
}
