package envoy

import (
	"unicode/utf8"

	"github.com/sluicehq/sluice/internal/yamlkit"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// metadata decodes a descriptor's metadata: a mapping of any YAML values,
// which a response returns as Envoy dynamic metadata as
// envoyproxy/ratelimit does (see WithDynamicMetadata). Field names are
// kept as the file writes them; numbers become doubles, as in JSON. null
// or an empty mapping is none.
func (d *decoder) metadata(n *yaml.Node, path string) (*structpb.Struct, error) {
	if v := yamlkit.Deref(n); v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil, nil
	}
	s, err := d.metaStruct(n, path, 0)
	if err != nil || len(s.Fields) == 0 {
		return nil, err
	}
	return s, nil
}

// metaStruct decodes a mapping of metadata.
func (d *decoder) metaStruct(n *yaml.Node, path string, depth int) (*structpb.Struct, error) {
	n = yamlkit.Deref(n)
	if err := d.Visit(n, path); err != nil {
		return nil, err
	}
	if n.Kind != yaml.MappingNode {
		return nil, d.Failf(n, path, "must be a mapping (name: value), not %s", yamlkit.Describe(n))
	}
	s := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(n.Content)/2)}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := yamlkit.Deref(n.Content[i])
		switch {
		case k.Kind != yaml.ScalarNode || k.Tag == "!!null":
			return nil, d.Failf(k, path, "a field name must be a plain string, not %s", yamlkit.Describe(k))
		case k.Tag == "!!merge":
			return nil, d.Failf(k, path, "merge keys (<<) are not supported")
		case !utf8.ValidString(k.Value):
			return nil, d.Failf(k, path, "a field name must be valid UTF-8")
		}
		p := yamlkit.Sub(path, k.Value)
		if _, dup := s.Fields[k.Value]; dup {
			return nil, d.Failf(k, p, "set twice")
		}
		v, err := d.metaValue(n.Content[i+1], p, depth+1)
		if err != nil {
			return nil, err
		}
		s.Fields[k.Value] = v
	}
	return s, nil
}

// metaValue decodes one value of metadata.
func (d *decoder) metaValue(n *yaml.Node, path string, depth int) (*structpb.Value, error) {
	n = yamlkit.Deref(n)
	if depth > maxDepth {
		return nil, d.Failf(n, path, "nested more than %d deep", maxDepth)
	}
	switch n.Kind {
	case yaml.MappingNode:
		s, err := d.metaStruct(n, path, depth)
		if err != nil {
			return nil, err
		}
		return structpb.NewStructValue(s), nil
	case yaml.SequenceNode:
		if err := d.Visit(n, path); err != nil {
			return nil, err
		}
		l := &structpb.ListValue{Values: make([]*structpb.Value, len(n.Content))}
		for i, item := range n.Content {
			v, err := d.metaValue(item, yamlkit.Elem(path, i), depth+1)
			if err != nil {
				return nil, err
			}
			l.Values[i] = v
		}
		return structpb.NewListValue(l), nil
	case yaml.ScalarNode:
		return d.metaScalar(n, path)
	}
	return nil, d.Failf(n, path, "must be a value, not %s", yamlkit.Describe(n))
}

// metaScalar decodes a scalar of metadata: null, a boolean, a number, or
// else a string.
func (d *decoder) metaScalar(n *yaml.Node, path string) (*structpb.Value, error) {
	var err error
	switch n.Tag {
	case "!!null":
		return structpb.NewNullValue(), nil
	case "!!bool":
		var b bool
		if err = n.Decode(&b); err == nil {
			return structpb.NewBoolValue(b), nil
		}
	case "!!int", "!!float":
		var f float64
		if err = n.Decode(&f); err == nil {
			return structpb.NewNumberValue(f), nil
		}
	}
	if err != nil {
		return nil, d.Failf(n, path, "%s is not %s", yamlkit.Quote(n.Value), yamlkit.Describe(n))
	}
	if !utf8.ValidString(n.Value) {
		return nil, d.Failf(n, path, "must be valid UTF-8")
	}
	return structpb.NewStringValue(n.Value), nil
}
