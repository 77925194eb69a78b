package yamlkit

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

	"go.yaml.in/yaml/v3"
)

// Input checks a file's content against the largest size accepted, max
// bytes, and returns it without a UTF-8 byte order mark.
func Input(data []byte, max int) ([]byte, error) {
	if len(data) > max {
		return nil, fmt.Errorf("larger than %d bytes", max)
	}
	return bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), nil
}

// ReadFile reads at most max bytes of path. Its errors say what failed
// ("open: no such file or directory") without repeating the path, which
// the caller's error names, and wrap the cause, so that errors.Is(err,
// fs.ErrNotExist) works.
func ReadFile(path string, max int) ([]byte, error) {
	fail := func(err error) error {
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			err = fmt.Errorf("%s: %w", pe.Op, pe.Err)
		}
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fail(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, fail(err)
	}
	if len(data) > max {
		return nil, fmt.Errorf("larger than %d bytes", max)
	}
	return data, nil
}

// SyntaxError is a file that is not YAML.
type SyntaxError struct {
	// Line is the 1-based line of the mistake, 0 when unknown.
	Line int
	// Err says what is wrong, as "invalid YAML: ...".
	Err error
}

// Error returns Err's message.
func (e *SyntaxError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *SyntaxError) Unwrap() error { return e.Err }

// Documents reads the YAML documents of a file one at a time.
type Documents struct {
	dec  *yaml.Decoder
	done error
}

// NewDocuments returns the documents of data.
func NewDocuments(data []byte) *Documents {
	return &Documents{dec: yaml.NewDecoder(bytes.NewReader(data))}
}

// Next returns the next document (a yaml.DocumentNode, whose Content is
// empty for an empty document), io.EOF after the last, or a
// [*SyntaxError]; after an error it returns that error again. A panic of
// the YAML library is a *SyntaxError too: a malformed file must never
// take the process down, least of all from a reload goroutine.
func (d *Documents) Next() (doc *yaml.Node, err error) {
	if d.done != nil {
		return nil, d.done
	}
	defer func() {
		if p := recover(); p != nil {
			doc, err = nil, &SyntaxError{Err: fmt.Errorf("invalid YAML: %v", p)}
		}
		if err != nil {
			d.done = err
		}
	}()
	var n yaml.Node
	if err := d.dec.Decode(&n); err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		return nil, syntaxError(err)
	}
	return &n, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// syntaxError splits a YAML library error into its line and message.
func syntaxError(err error) *SyntaxError {
	msg := err.Error()
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	return &SyntaxError{Line: line, Err: errors.New("invalid YAML: " + msg)}
}
