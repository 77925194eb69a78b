package rulefile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// decoder reads a parsed rule file, node by node, so that every error
// carries the line of the value it is about. It checks each mapping's keys
// itself: an unknown field, such as a misspelt one, is an error.
type decoder struct {
	file string
	env  *env
	// The entry being read, for error messages.
	section string // "rule", "bypass" or ""
	name    string
	index   int
}

// fail returns a *FileError at n's line about field.
func (d *decoder) fail(n *yaml.Node, field, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &FileError{
		File: d.file, Line: line, Rule: d.name, Field: field,
		Err:     fmt.Errorf(format, args...),
		section: d.section, index: d.index,
	}
}

// enter makes d describe errors as being inside the index-th (1-based)
// entry of section, named name ("" until known).
func (d *decoder) enter(section string, index int, name string) {
	d.section, d.index, d.name = section, index, name
}

// leave makes d describe errors as being outside any entry.
func (d *decoder) leave() { d.enter("", 0, "") }

// maxAliasHops bounds the alias chain deref follows.
const maxAliasHops = 8

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

// sub returns the path of a field inside the field at path.
func sub(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// elem returns the path of the i-th (0-based) element of the list at path.
func elem(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// mapping checks that n is a mapping whose keys are all in known, each
// once, and returns its values by key.
func (d *decoder) mapping(n *yaml.Node, path string, known ...string) (map[string]*yaml.Node, error) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		return nil, d.fail(n, path, "must be a mapping (name: value), not %s", describe(n))
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := deref(n.Content[i])
		if k.Kind != yaml.ScalarNode || k.Tag == "!!null" {
			return nil, d.fail(k, path, "a field name must be a plain string, not %s", describe(k))
		}
		name := k.Value
		if k.Tag == "!!merge" {
			return nil, d.fail(k, path, "merge keys (<<) are not supported; use defaults")
		}
		if !slices.Contains(known, name) {
			if len(name) > maxFieldName { // perhaps a secret pasted in the wrong place
				return nil, d.fail(k, path, "unknown field (a %d-byte name, not shown)", len(name))
			}
			return nil, d.fail(k, path, "unknown field %s%s", quote(name), suggest(name, known))
		}
		if prev, dup := out[name]; dup {
			return nil, d.fail(k, sub(path, name), "set twice (first at line %d)", prev.Line)
		}
		out[name] = n.Content[i+1]
	}
	return out, nil
}

// maxQuoted is the longest file text an error message repeats.
const maxQuoted = 64

// maxFieldName is the longest unknown field name an error message repeats.
const maxFieldName = 24

// quote quotes a value from the file for an error message, shortened.
func quote(s string) string {
	if len(s) > maxQuoted {
		return strconv.Quote(s[:maxQuoted]) + "..."
	}
	return strconv.Quote(s)
}

// suggest returns " (did you mean "x"?)" for the known name closest to a
// misspelt one, or the list of known names.
func suggest(name string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(strings.ToLower(name), k); d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return " (known: " + strings.Join(known, ", ") + ")"
}

// editDistance is the Levenshtein distance of a and b, bytewise, capped
// for long inputs (which are never close to a field name).
func editDistance(a, b string) int {
	if len(a) > 2*len(b)+3 {
		return len(a)
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// str reads a non-null scalar as text.
func (d *decoder) str(n *yaml.Node, path string) (string, error) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", d.fail(n, path, "must be a string, not %s", describe(n))
	}
	return n.Value, nil
}

// integer reads a whole number.
func (d *decoder) integer(n *yaml.Node, path string) (int64, error) {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!float" {
		return 0, d.fail(n, path, "%s is not a whole number", quote(n.Value))
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		return 0, d.fail(n, path, "must be a whole number, not %s", describe(n))
	}
	var v int64
	if err := n.Decode(&v); err != nil {
		return 0, d.fail(n, path, "%s is out of range", quote(n.Value))
	}
	return v, nil
}

// boolean reads true or false.
func (d *decoder) boolean(n *yaml.Node, path string) (bool, error) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		return false, d.fail(n, path, "must be true or false, not %s", describe(n))
	}
	var v bool
	if err := n.Decode(&v); err != nil {
		return false, d.fail(n, path, "must be true or false")
	}
	return v, nil
}

// list reads a list of strings; with scalarOK a single string stands for
// a list of one. Each element is checked by check, which returns the
// normalised value or a message. Empty lists are refused: a field that is
// there should say something.
func (d *decoder) list(n *yaml.Node, path string, scalarOK bool, check func(string) (string, error)) ([]string, error) {
	n = deref(n)
	items := []*yaml.Node{n}
	switch {
	case n.Kind == yaml.SequenceNode:
		items = n.Content
		if len(items) == 0 {
			return nil, d.fail(n, path, "empty list: leave the field out instead")
		}
	case !scalarOK:
		return nil, d.fail(n, path, "must be a list, not %s", describe(n))
	}
	out := make([]string, 0, len(items))
	for i, item := range items {
		p := path
		if n.Kind == yaml.SequenceNode {
			p = elem(path, i)
		}
		s, err := d.str(item, p)
		if err != nil {
			return nil, err
		}
		if s, err = check(s); err != nil {
			return nil, d.fail(deref(item), p, "%v", err)
		}
		out = append(out, s)
	}
	return out, nil
}
