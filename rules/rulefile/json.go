package rulefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// jsonParser turns a JSON document into the yaml.Node tree the decoder
// reads, with each node's line, so that .json files are held to JSON's
// grammar (YAML's differs in corners, such as the \/ escape) and their
// errors point at lines like those of YAML files.
type jsonParser struct {
	data []byte
	dec  *json.Decoder
	off  int64 // offset up to which lines were counted
	line int
}

// maxJSONDepth bounds nesting; a rule file needs five levels.
const maxJSONDepth = 32

// parseJSON returns the document node of data, or an error and the line it
// is at.
func parseJSON(data []byte) (*yaml.Node, int, error) {
	p := &jsonParser{data: data, dec: json.NewDecoder(bytes.NewReader(data)), line: 1}
	p.dec.UseNumber()
	tok, err := p.dec.Token()
	if err == io.EOF {
		return nil, 0, nil // empty
	}
	if err != nil {
		return nil, p.errLine(err), jsonErr(err)
	}
	root, err := p.value(tok, 0)
	if err != nil {
		return nil, p.errLine(err), err
	}
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, p.lineAt(p.dec.InputOffset()), errors.New("invalid JSON: data after the top-level value")
	}
	return &yaml.Node{Kind: yaml.DocumentNode, Line: 1, Content: []*yaml.Node{root}}, 0, nil
}

// lineAt returns the 1-based line of byte offset off. Offsets only grow,
// so lines are counted once.
func (p *jsonParser) lineAt(off int64) int {
	if off > int64(len(p.data)) {
		off = int64(len(p.data))
	}
	if off > p.off {
		p.line += bytes.Count(p.data[p.off:off], []byte{'\n'})
		p.off = off
	}
	return p.line
}

// errLine returns the line of a syntax error, or of the current offset.
func (p *jsonParser) errLine(err error) int {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return p.lineAt(se.Offset)
	}
	return p.lineAt(p.dec.InputOffset())
}

func jsonErr(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return errors.New("invalid JSON: unexpected end of file")
	}
	return fmt.Errorf("invalid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// value builds the node of the value that starts with tok.
func (p *jsonParser) value(tok json.Token, depth int) (*yaml.Node, error) {
	line := p.lineAt(p.dec.InputOffset())
	switch v := tok.(type) {
	case json.Delim:
		if depth >= maxJSONDepth {
			return nil, errors.New("invalid JSON: nested too deeply")
		}
		if v == '{' {
			return p.object(line, depth)
		}
		return p.array(line, depth)
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Line: line}, nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(string(v), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: string(v), Line: line}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(v), Line: line}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null", Line: line}, nil
	}
	return nil, fmt.Errorf("invalid JSON: unexpected %v", tok)
}

func (p *jsonParser) object(line, depth int) (*yaml.Node, error) {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: line}
	for {
		tok, err := p.dec.Token()
		if err != nil {
			return nil, jsonErr(err)
		}
		if tok == json.Delim('}') {
			return n, nil
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("invalid JSON: object key is not a string")
		}
		k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key, Line: p.lineAt(p.dec.InputOffset())}
		if tok, err = p.dec.Token(); err != nil {
			return nil, jsonErr(err)
		}
		v, err := p.value(tok, depth+1)
		if err != nil {
			return nil, err
		}
		n.Content = append(n.Content, k, v)
	}
}

func (p *jsonParser) array(line, depth int) (*yaml.Node, error) {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: line}
	for {
		tok, err := p.dec.Token()
		if err != nil {
			return nil, jsonErr(err)
		}
		if tok == json.Delim(']') {
			return n, nil
		}
		v, err := p.value(tok, depth+1)
		if err != nil {
			return nil, err
		}
		n.Content = append(n.Content, v)
	}
}
