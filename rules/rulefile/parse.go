package rulefile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"

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
	d := &decoder{file: name, env: e}
	if len(data) > MaxFileSize {
		return nil, d.fail(nil, "", "larger than %d bytes", MaxFileSize)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark
	root, err := parseDocument(name, data)
	if err != nil {
		return nil, err
	}
	return d.ruleFile(root)
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
	fail := func(err error) error {
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			err = fmt.Errorf("%s: %w", pe.Op, pe.Err)
		}
		return &FileError{File: path, Err: err}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fail(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fail(err)
	}
	if len(data) > MaxFileSize {
		return nil, fail(fmt.Errorf("larger than %d bytes", MaxFileSize))
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
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := decodeYAML(dec, &doc); err == io.EOF {
		return nil, nil
	} else if err != nil {
		return nil, fail(yamlError(err))
	}
	var next yaml.Node
	if err := decodeYAML(dec, &next); err == nil {
		return nil, fail(next.Line, errors.New("a second YAML document (---): a file holds one rule set"))
	} else if err != io.EOF {
		return nil, fail(yamlError(err))
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// decodeYAML decodes the next document into n, turning a panic of the YAML
// library into an error: a malformed file must never take the process
// down, least of all from a reload goroutine.
func decodeYAML(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("yaml: %v", p)
		}
	}()
	return dec.Decode(n)
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlError splits a YAML library error into its line and message.
func yamlError(err error) (int, error) {
	msg := err.Error()
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	return line, errors.New("invalid YAML: " + msg)
}
