package rulefile

import (
	"errors"
	"io"
	"strings"

	"github.com/sluicehq/sluice/internal/yamlkit"
	"github.com/sluicehq/sluice/rules"
	"go.yaml.in/yaml/v3"
)

// MaxFileSize is the size of the largest rule file accepted, 1 MiB.
const MaxFileSize = 1 << 20

// Parse builds a [rules.Set] from the content of a rule file (the format is in the
// package documentation). name appears in error messages, typically as the
// file's path, and selects the syntax: JSON when it ends in ".json"
// (compared without case), YAML otherwise.
//
// Every problem is found here, none per request: an error is a
// [*FileError] wrapping [ErrInvalidFile] that names the file, the line,
// the rule and the field. Only an invalid cfg gives another error.
func Parse(name string, data []byte, cfg LoadConfig) (*rules.Set, error) {
	e, err := cfg.env()
	if err != nil {
		return nil, err
	}
	data, err = yamlkit.Input(data, MaxFileSize)
	if err != nil {
		return nil, &FileError{File: name, Err: err}
	}
	root, err := parseDocument(name, data)
	if err != nil {
		return nil, err
	}
	return newDecoder(name, e).ruleFile(root)
}

// LoadFile reads the rule file at path and parses it (see [Parse]).
func LoadFile(path string, cfg LoadConfig) (*rules.Set, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, cfg)
}

// readFile reads at most MaxFileSize bytes of path. Errors are
// *FileErrors; they wrap the cause, so errors.Is(err, fs.ErrNotExist) works.
func readFile(path string) ([]byte, error) {
	data, err := yamlkit.ReadFile(path, MaxFileSize)
	if err != nil {
		return nil, &FileError{File: path, Err: err}
	}
	return data, nil
}

// isJSON reports whether name calls for JSON syntax.
func isJSON(name string) bool {
	return strings.HasSuffix(strings.ToLower(name), ".json")
}

// parseDocument returns the top-level node of a one-document file, or nil
// for an empty one.
func parseDocument(name string, data []byte) (*yaml.Node, error) {
	fail := func(line int, err error) error { return &FileError{File: name, Line: line, Err: err} }
	syntax := func(err error) error {
		if se, ok := errors.AsType[*yamlkit.SyntaxError](err); ok {
			return fail(se.Line, se.Err)
		}
		return fail(0, err)
	}
	if isJSON(name) {
		doc, line, err := parseJSON(data)
		if err != nil {
			return nil, fail(line, err)
		}
		if doc == nil {
			return nil, nil
		}
		return doc.Content[0], nil
	}
	docs := yamlkit.NewDocuments(data)
	doc, err := docs.Next()
	if err == io.EOF {
		return nil, nil
	} else if err != nil {
		return nil, syntax(err)
	}
	if next, err := docs.Next(); err == nil {
		return nil, fail(next.Line, errors.New("a second YAML document (---): a file holds one rule set"))
	} else if err != io.EOF {
		return nil, syntax(err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}
