package yamlkit

import "go.yaml.in/yaml/v3"

// Str reads a scalar other than null as text.
func (r *Reader) Str(n *yaml.Node, path string) (string, error) {
	n = Deref(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", r.Failf(n, path, "must be a string, not %s", Describe(n))
	}
	return n.Value, nil
}

// StrOrNull reads a scalar as text, null as "".
func (r *Reader) StrOrNull(n *yaml.Node, path string) (string, error) {
	if d := Deref(n); d.Kind == yaml.ScalarNode && d.Tag == "!!null" {
		return "", nil
	}
	return r.Str(n, path)
}

// Integer reads a whole number that fits in an int64.
func (r *Reader) Integer(n *yaml.Node, path string) (int64, error) {
	v, err := r.whole(n, path)
	if err != nil {
		return 0, err
	}
	var i int64
	if err := v.Decode(&i); err != nil {
		return 0, r.Failf(v, path, "%s is out of range", Quote(v.Value))
	}
	return i, nil
}

// IntegerIn reads a whole number from lo to hi.
func (r *Reader) IntegerIn(n *yaml.Node, path string, lo, hi int64) (int64, error) {
	v, err := r.whole(n, path)
	if err != nil {
		return 0, err
	}
	var i int64
	if err := v.Decode(&i); err != nil || i < lo || i > hi {
		return 0, r.Failf(v, path, "%s is out of range (%d to %d)", Quote(v.Value), lo, hi)
	}
	return i, nil
}

// whole returns n, aliases followed, if it is an integer scalar.
func (r *Reader) whole(n *yaml.Node, path string) (*yaml.Node, error) {
	n = Deref(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!float" {
		return nil, r.Failf(n, path, "%s is not a whole number", Quote(n.Value))
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		return nil, r.Failf(n, path, "must be a whole number, not %s", Describe(n))
	}
	return n, nil
}

// Boolean reads true or false.
func (r *Reader) Boolean(n *yaml.Node, path string) (bool, error) {
	n = Deref(n)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		return false, r.Failf(n, path, "must be true or false, not %s", Describe(n))
	}
	var v bool
	if err := n.Decode(&v); err != nil {
		return false, r.Failf(n, path, "must be true or false")
	}
	return v, nil
}

// Strings reads a list of strings; with scalarOK a single string stands
// for a list of one. Each element is checked by check, which returns the
// normalised value or what is wrong with it. An empty list is refused: a
// field that is there should say something.
func (r *Reader) Strings(n *yaml.Node, path string, scalarOK bool, check func(string) (string, error)) ([]string, error) {
	n = Deref(n)
	items := []*yaml.Node{n}
	switch {
	case n.Kind == yaml.SequenceNode:
		if err := r.Visit(n, path); err != nil {
			return nil, err
		}
		items = n.Content
		if len(items) == 0 {
			return nil, r.Failf(n, path, "empty list: leave the field out instead")
		}
	case !scalarOK:
		return nil, r.Failf(n, path, "must be a list, not %s", Describe(n))
	}
	out := make([]string, 0, len(items))
	for i, item := range items {
		p := path
		if n.Kind == yaml.SequenceNode {
			p = Elem(path, i)
		}
		s, err := r.Str(item, p)
		if err != nil {
			return nil, err
		}
		if s, err = check(s); err != nil {
			return nil, r.Failf(Deref(item), p, "%v", err)
		}
		out = append(out, s)
	}
	return out, nil
}
